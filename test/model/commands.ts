/**
 * The operations the tester generates (fast-check's model-based testing, `fc.commands`): each one
 * acts on the real system through its real edges (the vendor's paths, GraphQL, the statement
 * upload, the CLI's services for tasks dated last month) and on the model, and asserts the
 * answer it must get. Targets are picked by index at run time, so a shrunk sequence replays.
 */
import { Decimal } from 'decimal.js';
import fc from 'fast-check';
import { startGateway } from '../../src/bootstrap.js';
import { priceOf, type Submission } from './catalog-model.js';
import type { Contract } from './contract-model.js';
import { MoneyModel } from './money-model.js';
import type { Server } from './system.js';
import { acceptedMinute, adoptMinuteCounts, minuteNow, submitOnce } from './clock.js';
import { call, expectStatus, type Real } from './real.js';

export interface Env {
  model: MoneyModel;
  /** (project, Idempotency-Key) → the body it was first used with and the answer's task */
  keys: Map<string, { body: string; ref: string }>;
  /** statement files sent, by content: the same file again is the same statement */
  files: Set<string>;
  /** a closed month's figures as read when it closed */
  frozen: Map<string, string>;
  /** submissions the vendor refused: their task rows, rejected (§4) */
  refused: number;
  /** what each chat task asked for (the vendor's usage is made from it), and the contract at its acceptance (§19) */
  chat: Map<
    string,
    { model: 'claude-sonnet-5' | 'gpt-5.6-luna'; words: number; maxTokens: number; contract: Contract }
  >;
}

export type Cmd = fc.AsyncCommand<Env, Real>;

/** A sequence's start: the model of `current` and `previous` months, nothing done yet. */
export function newEnv(current: string, previous: string): Env {
  return {
    model: new MoneyModel(current, previous),
    keys: new Map(),
    files: new Set(),
    frozen: new Map(),
    refused: 0,
    chat: new Map(),
  };
}

export const USERS = [null, 'u1', 'u2'] as const;

export const bodyArb: fc.Arbitrary<Submission> = fc.oneof(
  fc.record({
    model: fc.constant('seedream-4.0' as const),
    resolution: fc.constantFrom('1K', '2K', '4K'),
    n: fc.integer({ min: 1, max: 3 }),
  }),
  fc.record({ model: fc.constant('nano-banana-pro' as const), resolution: fc.constantFrom('1K', '2K', '4K') }),
  fc.record({ model: fc.constant('sora-2-pro' as const), duration: fc.constantFrom(10, 15) }),
  fc.record({
    model: fc.constant('wan2.7-video' as const),
    resolution: fc.constantFrom('720p', '1080p'),
    duration: fc.constant(5),
  }),
);

export const request = (s: Submission) => ({ ...s, prompt: 'model-based' });
export const cents = (min: number, max: number) => fc.integer({ min, max }).map((c) => new Decimal(c).div(100));

/** A submission through the vendor's path: admitted exactly when the model's budgets (§4) and limits (§20) admit it. */
export class Submit implements Cmd {
  constructor(
    readonly at: number,
    readonly project: number,
    readonly body: Submission,
    readonly user: number,
    readonly tags: number,
    readonly key: string | null,
  ) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const p = real.sys.projects[this.project]!;
    const { unit, amount } = priceOf(this.body, env.model.seedream, env.model.contract);
    // beta's key carries team=b (a request may not change it): its requests add env=x instead.
    const sent = this.tags ? [p.name === 'beta' ? 'env=x' : 'team=a'] : [];
    const tags = [...sent, ...(p.name === 'beta' ? ['team=b'] : [])];
    const user = USERS[this.user]!;
    // What the key is bound to: the body and the attribution (decisions §4, §7).
    const bodyText = JSON.stringify([request(this.body), user, sent]);
    const bound = this.key ? env.keys.get(`${p.id}:${this.key}`) : undefined;
    const killed = bound?.ref.startsWith('gw-') ? env.model.byRef(bound.ref) : undefined;
    const candidate = { model: this.body.model, unit, user, tags, hold: amount };
    const { res, answer, minute } = await submitOnce(env, real, p.id, candidate, () =>
      call(
        real,
        this.at,
        'POST',
        '/api-platform/v1/generations',
        {
          key: p.key,
          body: request(this.body),
          headers: {
            ...(user ? { 'x-spendgate-user': user } : {}),
            ...(sent.length ? { 'x-spendgate-tags': sent.join(',') } : {}),
            ...(this.key ? { 'idempotency-key': this.key } : {}),
          },
        },
        killed ? [504] : [],
      ),
    );
    if (bound) {
      // The same key: the first answer again (same body), or refused (another body); never a second task (§4).
      if (bound.body !== bodyText) return expectStatus(res, 409, `${this}: another request under a used key`);
      // Its first request's instance died before the vendor answered it (kill-commands.ts): in
      // progress until swept, then of unknown outcome, for good (§10).
      if (killed) return expectStatus(res, killed.state === 'held' ? 409 : 504, `${this}: a retry of ${bound.ref}`);
      expectStatus(res, 200, `${this}: a replay`);
      expectEqual(
        String((res.body as { data: { taskId: number } }).data.taskId),
        bound.ref,
        `${this}: the replay names the first task`,
      );
      return;
    }
    expectStatus(res, answer, String(this));
    if (answer !== 200) return;
    const ref = String((res.body as { data: { taskId: number } }).data.taskId);
    env.model.accept({ ref, project: p.id, ...candidate, viaKey: true, minute: await minute(ref) });
    if (this.key) env.keys.set(`${p.id}:${this.key}`, { body: bodyText, ref });
  }
  toString = () =>
    `submit(gw${this.at}, ${['alpha', 'beta'][this.project]}, ${JSON.stringify(this.body)}, user ${USERS[this.user]}${this.tags ? ', tagged' : ''}${this.key ? `, key ${this.key}` : ''})`;
}

/** A media submission of a project with its key, as the model prices it (beta's key carries team=b). */
export function mediaAsk(env: Env, real: Real, project: number, body: Submission) {
  const p = real.sys.projects[project]!;
  const { unit, amount } = priceOf(body, env.model.seedream, env.model.contract);
  return { p, unit, amount, tags: p.name === 'beta' ? ['team=b'] : [] };
}

/** The same submission n times at once over both instances: exactly as many admitted as fit. */
export class Burst implements Cmd {
  constructor(
    readonly project: number,
    readonly body: Submission,
    readonly n: number,
  ) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const { p, unit, amount, tags } = mediaAsk(env, real, this.project, this.body);
    const from = minuteNow();
    const answers = await Promise.all(
      Array.from({ length: this.n }, (_, i) =>
        call(real, i % 2, 'POST', '/api-platform/v1/generations', { key: p.key, body: request(this.body) }),
      ),
    );
    const turned = minuteNow() !== from;
    // n identical holds: k of them fit when one hold of k × the amount would (every hard budget counts
    // them all) and k more fit every limit; the rest are refused by one or the other.
    let fits = 0;
    const candidate = { model: this.body.model, unit, user: null, tags, hold: amount };
    const at = { minute: from };
    while (fits < this.n && env.model.answer(p.id, candidate, fits + 1, at) === 200) fits++;
    const admitted = answers.filter((a) => a.status === 200);
    // Across a minute's turn a per-minute limit may count some in either minute: the counts are then
    // the model's from each task's own minute, checked by the invariants after this step.
    if (!turned) expectEqual(admitted.length, fits, `${this}: admitted`);
    // Every one refused saw the `fits` admitted before it (one admitted earlier would have fitted), so
    // each is refused as the (fits + 1)th alone would be: by a budget (402) before a limit (429).
    const refusal = fits < this.n ? env.model.answer(p.id, candidate, fits + 1, at) : null;
    for (const a of answers)
      if (a.status !== 200 && (turned ? ![402, 429].includes(a.status) : a.status !== refusal))
        throw new Error(
          `${this}: a refusal must be ${refusal} (${fits} admitted), got ${a.status} ${a.text.slice(0, 200)}`,
        );
    const made = admitted.map((a) => String((a.body as { data: { taskId: number } }).data.taskId));
    const minutes = await Promise.all(made.map((ref) => (turned ? acceptedMinute(real, p.id, ref) : from)));
    for (const [i, ref] of made.entries())
      env.model.accept({ ref, project: p.id, ...candidate, viaKey: true, minute: minutes[i] });
    // Which of them came first across the turn, and so in which minute a late one counted, the
    // tester cannot see: this minute's counts are taken as the product has them.
    if (turned) await adoptMinuteCounts(env, real, p.id);
  }
  toString = () => `burst(${['alpha', 'beta'][this.project]}, ${JSON.stringify(this.body)} × ${this.n})`;
}

/** The vendor decides a task's fate: ready, failed, it never finishes, or it forgets the task (its polls: 404). */
export class VendorOutcome implements Cmd {
  constructor(
    readonly pick: number,
    readonly fate: 'ready' | 'failed' | 'stall' | 'forget',
  ) {}
  // A chat task's "ready" carries usage, which ChatOutcome makes: here only media tasks turn ready.
  private readonly open = (env: Readonly<Env>) =>
    env.model.tasks.filter(
      (t) => t.vendor === 'processing' && /^\d+$/.test(t.ref) && (this.fate !== 'ready' || t.unit === 'USD'),
    );
  check = (env: Readonly<Env>) => this.open(env).length > 0;
  async run(env: Env, real: Real) {
    const t = pickOf(this.open(env), this.pick);
    if (this.fate === 'stall' || this.fate === 'forget') {
      await fetch(`${real.sys.simUrl}/__sim/tasks/${t.ref}/${this.fate}`, { method: 'POST' });
      // The vendor's "never" and "not found": no later outcome changes either.
      t.vendor = this.fate === 'stall' ? 'stalled' : 'forgotten';
    } else {
      await fetch(`${real.sys.simUrl}/__sim/tasks/${t.ref}/complete`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ status: this.fate }),
      });
      t.vendor = this.fate;
    }
  }
  toString = () => `vendor(#${this.pick}, ${this.fate})`;
}

/** A client polls a task: a terminal answer settles it, exactly once, on whichever instance. */
export class Poll implements Cmd {
  constructor(
    readonly at: number,
    readonly pick: number,
  ) {}
  check = (env: Readonly<Env>) => env.model.tasks.some((t) => /^\d+$/.test(t.ref) && t.project !== '');
  async run(env: Env, real: Real) {
    const t = pickOf(
      env.model.tasks.filter((x) => /^\d+$/.test(x.ref)),
      this.pick,
    );
    const key = real.sys.projects.find((p) => p.id === t.project)!.key;
    expectStatus(await call(real, this.at, 'GET', `/api-platform/v1/tasks/${t.ref}`, { key }), 200, String(this));
    env.model.settle(t);
    env.model.notFound(t);
  }
  toString = () => `poll(gw${this.at}, #${this.pick})`;
}

/**
 * Faults: an instance replaced (closed, a new one started on the same database); PostgreSQL stopped at once and
 * started.
 */
export class RestartGateway implements Cmd {
  check = () => true;
  async run(env: Env, real: Real) {
    await real.sys.gateways[1]!.close();
    real.sys.gateways[1] = await startGateway(real.gatewayEnv());
    env.model.sweepAbandoned(); // a starting gateway sweeps, as its poll rounds do
  }
  toString = () => 'restart-gw1';
}

export class RestartDatabase implements Cmd {
  constructor(readonly server: Server) {}
  check = () => true;
  async run(_env: Env, real: Real) {
    await this.server.restart(300);
    await real.untilReady();
  }
  toString = () => 'restart-postgres';
}

export function pickOf<T>(list: T[], i: number): T {
  return list[i % list.length]!;
}

export function expectEqual(actual: unknown, expected: unknown, what: string): void {
  if (JSON.stringify(actual) !== JSON.stringify(expected))
    throw new Error(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}

/** A command, then the invariants (and the count of operations run). */
export class Checked implements Cmd {
  constructor(
    readonly inner: Cmd,
    readonly after: (env: Env, real: Real, what: string) => Promise<void>,
  ) {}
  check = (env: Readonly<Env>) => this.inner.check(env);
  async run(env: Env, real: Real) {
    await this.inner.run(env, real);
    await this.after(env, real, this.inner.toString());
  }
  toString = () => this.inner.toString();
}
