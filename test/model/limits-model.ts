/**
 * Limits (decisions §20) in the reference model: a project's limit, for the whole project, one end
 * user or each end user its own count, on tasks in flight or on requests a UTC minute.
 * - Tasks in flight: it counts the tasks admitted after it was set (setting it again changes only
 *   its amount) while they are in flight: held, or of unknown outcome until an operator resolves them.
 * - Requests or chat tokens a minute: a count per subject that begins again with the first request
 *   of a later minute; a request of an earlier minute than the count's (one that waited across a
 *   turn, or a hold dated back) is counted in the count's minute. It counts from the first request
 *   after the limit was set; a request ending does not lower a count of requests. A chat counts its
 *   estimate (the prompt's estimated tokens + max_tokens) and, once it ends, what its settlement
 *   counted instead (0 when nothing ran; the estimate kept when charged at it), while its count is
 *   still at the minute it was counted in.
 * A request past a limit is refused with 429, after the budgets (a request a hard budget refuses is
 * a 402 whatever the limits say).
 */
import type { Task } from './money-model.js';

export type LimitScope = 'PROJECT' | 'USER' | 'EACH_USER';
export type LimitKind = 'TASKS_IN_FLIGHT' | 'REQUESTS_PER_MINUTE' | 'TOKENS_PER_MINUTE';

/** The UTC minute (minutes since the epoch) of an instant in ms. */
export const minuteOf = (ms: number) => Math.floor(ms / 60_000);

export interface Limit {
  id: string;
  project: string;
  kind: LimitKind;
  scope: LimitScope;
  /** USER: the end user it counts */
  value: string | null;
  amount: number;
}

/** Whether a task is in flight, its hold standing: held, or unknown until resolved (§10). It counts in a limit. */
export const inFlight = (t: Task) => t.state === 'held' || (t.state === 'unknown' && !t.resolved);

const perMinute = (l: Limit) => l.kind !== 'TASKS_IN_FLIGHT';
/** What a request adds to a per-minute limit: one request, or its chat tokens (0: not counted). */
const adds = (l: Limit, tokens: number) => (l.kind === 'TOKENS_PER_MINUTE' ? tokens : 1);

export class LimitsModel {
  readonly limits = new Map<string, Limit>();
  /** the tasks-in-flight limits that counted each task when it was admitted */
  private readonly counting = new Map<Task, string[]>();
  /** a per-minute limit's count per subject (`id:subject`): its minute and what it counted in it */
  private readonly minutes = new Map<string, { minute: number; used: number }>();
  /** a chat's tokens counted per tokens-per-minute count, and the minute, to correct when it ends */
  private readonly tokens = new Map<Task, Array<{ key: string; minute: number; tokens: number }>>();

  /** The subject a limit counts a request of `user` under ('' for one count), or null when it does not count it. */
  subject(l: Limit, project: string, user: string | null): string | null {
    if (l.project !== project) return null;
    if (l.scope === 'PROJECT') return '';
    if (l.scope === 'USER') return user === l.value ? '' : null;
    return user; // EACH_USER: the user's own count; a request without one is not counted
  }

  /** Each subject's use of `l` now (`minute`: this minute), zeros left out. */
  use(l: Limit, tasks: readonly Task[], minute: number): Map<string, number> {
    const out = new Map<string, number>();
    if (perMinute(l)) {
      for (const [key, c] of this.minutes)
        if (key.startsWith(`${l.id}:`) && c.minute === minute && c.used > 0)
          out.set(key.slice(l.id.length + 1), c.used);
      return out;
    }
    for (const t of tasks) {
      if (!inFlight(t) || !this.counting.get(t)?.includes(l.id)) continue;
      const s = this.subject(l, t.project, t.user)!;
      out.set(s, (out.get(s) ?? 0) + 1);
    }
    return out;
  }

  /** What a request of `minute` finds counted under `l` for subject `s`: the count of its minute or a later one. */
  private countedAt(l: Limit, s: string, minute: number): number {
    const c = this.minutes.get(`${l.id}:${s}`);
    return c && c.minute >= minute ? c.used : 0;
  }

  /** Whether `n` more requests of `user` made in `minute` (each a chat estimated at `tokens`, or 0) fit every limit. */
  fits(project: string, user: string | null, n: number, tasks: readonly Task[], minute: number, tokens = 0): boolean {
    for (const l of this.limits.values()) {
      const s = this.subject(l, project, user);
      if (s === null) continue;
      if (perMinute(l)) {
        const a = adds(l, tokens);
        if (a > 0 && this.countedAt(l, s, minute) + n * a > l.amount) return false;
      } else if ((this.use(l, tasks, minute).get(s) ?? 0) + n > l.amount) return false;
    }
    return true;
  }

  /** A task admitted in `minute`: its minute's counts raised, and the in-flight limits that count it until it ends. */
  admitted(task: Task, minute: number): void {
    this.counted(task.project, task.user, minute, task.tokens ?? 0, task);
    const ids = [...this.limits.values()]
      .filter((l) => l.kind === 'TASKS_IN_FLIGHT' && this.subject(l, task.project, task.user) !== null)
      .map((l) => l.id);
    if (ids.length) this.counting.set(task, ids);
  }

  /** A request admitted in `minute` (one the vendor then refused too): counted by the per-minute limits. */
  counted(project: string, user: string | null, minute: number, tokens = 0, task?: Task): void {
    for (const l of this.limits.values()) {
      const s = this.subject(l, project, user);
      const a = adds(l, tokens);
      if (s === null || !perMinute(l) || a === 0) continue;
      const key = `${l.id}:${s}`;
      const c = {
        minute: Math.max(this.minutes.get(key)?.minute ?? minute, minute),
        used: this.countedAt(l, s, minute) + a,
      };
      this.minutes.set(key, c);
      if (task && l.kind === 'TOKENS_PER_MINUTE')
        this.tokens.set(task, [...(this.tokens.get(task) ?? []), { key, minute: c.minute, tokens: a }]);
    }
  }

  /**
   * A chat ended: a tokens-per-minute count still at the minute it was counted in holds what its
   * settlement counted (`counted`; null: the estimate stands) instead of the estimate.
   */
  ended(task: Task, counted: number | null): void {
    for (const h of this.tokens.get(task) ?? []) {
      const c = this.minutes.get(h.key);
      if (c && c.minute === h.minute) c.used = Math.max(0, c.used - (h.tokens - (counted ?? h.tokens)));
    }
    this.tokens.delete(task);
  }

  /** A per-minute limit's counts of `minute` as the product has them (the rest of its counts kept). */
  adopt(id: string, minute: number, use: ReadonlyArray<{ subject: string; used: number }>): void {
    const l = this.limits.get(id);
    if (!l || !perMinute(l)) return;
    for (const [key, c] of this.minutes) if (key.startsWith(`${id}:`) && c.minute === minute) this.minutes.delete(key);
    for (const u of use) this.minutes.set(`${id}:${u.subject}`, { minute, used: u.used });
  }

  /** A limit deleted: its counts go with it. */
  delete(id: string): void {
    this.limits.delete(id);
    for (const key of [...this.minutes.keys()]) if (key.startsWith(`${id}:`)) this.minutes.delete(key);
  }
}
