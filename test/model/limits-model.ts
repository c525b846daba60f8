/**
 * Limits on tasks in flight (decisions §20), in the reference model: a project's limit, for the
 * whole project, one end user or each end user its own count. It counts the tasks admitted after
 * it was set (setting it again changes only its amount) while they are in flight: held, or of
 * unknown outcome until an operator resolves them. A request past it is refused with 429, after the
 * budgets (a request a hard budget refuses is a 402 whatever the limits say).
 */
import type { Task } from './money-model.js';

export type LimitScope = 'PROJECT' | 'USER' | 'EACH_USER';

export interface Limit {
  id: string;
  project: string;
  scope: LimitScope;
  /** USER: the end user it counts */
  value: string | null;
  amount: number;
}

/** Whether a task is in flight, its hold standing: held, or unknown until resolved (§10). It counts in a limit. */
export const inFlight = (t: Task) => t.state === 'held' || (t.state === 'unknown' && !t.resolved);

export class LimitsModel {
  readonly limits = new Map<string, Limit>();
  /** the limits that counted each task when it was admitted */
  private readonly counting = new Map<Task, string[]>();

  /** The subject a limit counts a request of `user` under ('' for one count), or null when it does not count it. */
  subject(l: Limit, project: string, user: string | null): string | null {
    if (l.project !== project) return null;
    if (l.scope === 'PROJECT') return '';
    if (l.scope === 'USER') return user === l.value ? '' : null;
    return user; // EACH_USER: the user's own count; a request without one is not counted
  }

  /** Each subject's tasks in flight under `l`, zeros left out. */
  use(l: Limit, tasks: readonly Task[]): Map<string, number> {
    const out = new Map<string, number>();
    for (const t of tasks) {
      if (!inFlight(t) || !this.counting.get(t)?.includes(l.id)) continue;
      const s = this.subject(l, t.project, t.user)!;
      out.set(s, (out.get(s) ?? 0) + 1);
    }
    return out;
  }

  /** Whether `n` more requests of `user` fit every limit of the project. */
  fits(project: string, user: string | null, n: number, tasks: readonly Task[]): boolean {
    for (const l of this.limits.values()) {
      const s = this.subject(l, project, user);
      if (s !== null && (this.use(l, tasks).get(s) ?? 0) + n > l.amount) return false;
    }
    return true;
  }

  /** A task admitted: the limits that count it from now until it ends. */
  admitted(task: Task): void {
    const ids = [...this.limits.values()]
      .filter((l) => this.subject(l, task.project, task.user) !== null)
      .map((l) => l.id);
    if (ids.length) this.counting.set(task, ids);
  }
}
