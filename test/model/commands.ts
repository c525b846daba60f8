/**
 * The operations the tester generates (fast-check's model-based testing, `fc.commands`): each one
 * acts on the real system through its real edges (the vendor's paths, GraphQL, the statement
 * upload, the CLI's services for tasks dated last month) and on the model, and asserts the
 * answer it must get. Targets are picked by index at run time, so a shrunk sequence replays.
 */
import { Decimal } from 'decimal.js';
import fc from 'fast-check';
import { LedgerService } from '../../src/ledger/ledger.service.js';
import { PriceBookService } from '../../src/pricing/price-book.service.js';
import { startGateway } from '../../src/bootstrap.js';
import { holdFor, taskIdOf } from '../support/builders.js';
import {
  MoneyModel,
  priceOf,
  unitOfPart,
  type Part,
  type Scope,
  type Submission,
  type Task,
  type Unit,
} from './money-model.js';
import type { Server } from './system.js';
import { call, expectStatus, gql, simulatorKnobs, type Real } from './real.js';

export interface Env {
  model: MoneyModel;
  /** (project, Idempotency-Key) → the body it was first used with and the answer's task */
  keys: Map<string, { body: string; ref: string }>;
  /** statement files sent, by content: the same file again is the same statement */
  files: Set<string>;
  /** a closed month's figures as read when it closed */
  frozen: Map<string, string>;
  /** what each chat task asked for (its model and max_tokens: the vendor's usage is made from them) */
  chat: Map<string, { model: 'claude-sonnet-5' | 'gpt-5.6-luna'; words: number; maxTokens: number }>;
}

export type Cmd = fc.AsyncCommand<Env, Real>;

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
    const { unit, amount } = priceOf(this.body, env.model.seedream, env.model.imageDiscount);
    // beta's key carries team=b (a request may not change it): its requests add env=x instead.
    const sent = this.tags ? [p.name === 'beta' ? 'env=x' : 'team=a'] : [];
    const tags = [...sent, ...(p.name === 'beta' ? ['team=b'] : [])];
    const user = USERS[this.user]!;
    // What the key is bound to: the body and the attribution (decisions §4, §7).
    const bodyText = JSON.stringify([request(this.body), user, sent]);
    const bound = this.key ? env.keys.get(`${p.id}:${this.key}`) : undefined;
    const res = await call(real, this.at, 'POST', '/api-platform/v1/generations', {
      key: p.key,
      body: request(this.body),
      headers: {
        ...(user ? { 'x-spendgate-user': user } : {}),
        ...(sent.length ? { 'x-spendgate-tags': sent.join(',') } : {}),
        ...(this.key ? { 'idempotency-key': this.key } : {}),
      },
    });
    if (bound) {
      // The same key: the first answer again (same body), or refused (another body); never a second task (§4).
      if (bound.body !== bodyText) return expectStatus(res, 409, `${this}: another request under a used key`);
      expectStatus(res, 200, `${this}: a replay`);
      expectEqual(
        String((res.body as { data: { taskId: number } }).data.taskId),
        bound.ref,
        `${this}: the replay names the first task`,
      );
      return;
    }
    const answer = env.model.answer(p.id, { model: this.body.model, unit, user, tags, hold: amount });
    expectStatus(res, answer, String(this));
    if (answer !== 200) return;
    const ref = String((res.body as { data: { taskId: number } }).data.taskId);
    env.model.accept({ ref, project: p.id, model: this.body.model, unit, user, tags, hold: amount, viaKey: true });
    if (this.key) env.keys.set(`${p.id}:${this.key}`, { body: bodyText, ref });
  }
  toString = () =>
    `submit(gw${this.at}, ${['alpha', 'beta'][this.project]}, ${JSON.stringify(this.body)}, user ${USERS[this.user]}${this.tags ? ', tagged' : ''}${this.key ? `, key ${this.key}` : ''})`;
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
    const p = real.sys.projects[this.project]!;
    const { unit, amount } = priceOf(this.body, env.model.seedream, env.model.imageDiscount);
    const tags = p.name === 'beta' ? ['team=b'] : [];
    const answers = await Promise.all(
      Array.from({ length: this.n }, (_, i) =>
        call(real, i % 2, 'POST', '/api-platform/v1/generations', { key: p.key, body: request(this.body) }),
      ),
    );
    // n identical holds: k of them fit when one hold of k × the amount would (every hard budget counts
    // them all) and k more tasks in flight fit every limit; the rest are refused by one or the other.
    let fits = 0;
    const candidate = { model: this.body.model, unit, user: null, tags, hold: amount };
    while (fits < this.n && env.model.answer(p.id, candidate, fits + 1) === 200) fits++;
    const admitted = answers.filter((a) => a.status === 200);
    expectEqual(admitted.length, fits, `${this}: admitted`);
    // Every one refused saw the `fits` admitted before it (one admitted earlier would have fitted), so
    // each is refused as the (fits + 1)th alone would be: by a budget (402) before a limit (429).
    const refusal = fits < this.n ? env.model.answer(p.id, candidate, fits + 1) : null;
    for (const a of answers)
      if (a.status !== 200 && a.status !== refusal)
        throw new Error(
          `${this}: a refusal must be ${refusal} (${fits} admitted), got ${a.status} ${a.text.slice(0, 200)}`,
        );
    for (const a of admitted)
      env.model.accept({
        ref: String((a.body as { data: { taskId: number } }).data.taskId),
        project: p.id,
        model: this.body.model,
        unit,
        user: null,
        tags,
        hold: amount,
        viaKey: true,
      });
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

/** A submission whose answer is lost (the vendor's connection reset): unknown, its hold kept (§4, §10). */
export class LostAnswer implements Cmd {
  constructor(
    readonly at: number,
    readonly project: number,
    readonly body: Submission,
  ) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const p = real.sys.projects[this.project]!;
    const { unit, amount } = priceOf(this.body, env.model.seedream, env.model.imageDiscount);
    const tags = p.name === 'beta' ? ['team=b'] : [];
    const answer = env.model.answer(p.id, { model: this.body.model, unit, user: null, tags, hold: amount });
    await simulatorKnobs(real, { resetRate: 1 });
    const res = await call(
      real,
      this.at,
      'POST',
      '/api-platform/v1/generations',
      { key: p.key, body: request(this.body) },
      [502, 504],
    );
    await simulatorKnobs(real, { resetRate: 0 });
    if (answer !== 200) return expectStatus(res, answer, String(this));
    if (res.status !== 502 && res.status !== 504)
      throw new Error(`${this}: expected 502 or 504 (outcome unknown), got ${res.status} ${res.text.slice(0, 200)}`);
    const task = env.model.accept({
      ref: (res.body as { details: { gatewayTaskId: string } }).details.gatewayTaskId,
      project: p.id,
      model: this.body.model,
      unit,
      user: null,
      tags,
      hold: amount,
      viaKey: true,
    });
    task.state = 'unknown';
    task.vendor = 'none';
  }
  toString = () => `lost-answer(gw${this.at}, ${['alpha', 'beta'][this.project]}, ${JSON.stringify(this.body)})`;
}

/** An operator resolves an unknown task: CHARGE (the hold, or an amount) or RELEASE (§10). */
export class Resolve implements Cmd {
  constructor(
    readonly pick: number,
    readonly outcome: 'CHARGE' | 'RELEASE',
    readonly amount: Decimal | null,
  ) {}
  check = (env: Readonly<Env>) => env.model.tasks.some((t) => env.model.underReview(t));
  async run(env: Env, real: Real) {
    const t = pickOf(
      env.model.tasks.filter((x) => env.model.underReview(x)),
      this.pick,
    );
    const res = await gql(
      real,
      `mutation($t: ID!, $o: TaskResolution!, $a: Decimal) { resolveTask(taskId: $t, outcome: $o, reason: "model", amount: $a) { net } }`,
      { t: t.ref, o: this.outcome, a: this.outcome === 'CHARGE' && this.amount ? this.amount.toFixed() : null },
    );
    if (res.errors) throw new Error(`${this}: ${JSON.stringify(res.errors)}`);
    env.model.resolve(t, this.outcome, this.outcome === 'CHARGE' ? this.amount : null);
    env.model.afterResolution(t);
  }
  toString = () => `resolve(#${this.pick}, ${this.outcome}${this.amount ? ` ${this.amount.toFixed()}` : ''})`;
}

/**
 * A correction (§4): now, or dated last month or the month before (refused before the first month
 * of activity, §16); of a task archived with its month (§18), refused 404 until the month is restored.
 */
export class Adjust implements Cmd {
  constructor(
    readonly project: number,
    readonly amount: Decimal,
    readonly withTask: number | null,
    readonly when: 'now' | 'last month' | 'month before last' | '1970',
    readonly credits = false,
  ) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const projects = [...real.sys.projects.map((p) => p.id), real.sys.past.id];
    const projectId = projects[this.project % projects.length]!;
    const task =
      this.withTask === null ? null : (env.model.tasks.filter((t) => t.project === projectId)[this.withTask] ?? null);
    const m = env.model;
    const dated = { now: m.current, 'last month': m.previous, 'month before last': m.older, '1970': '1970-01' }[
      this.when
    ];
    const at = this.when === 'now' ? null : `${dated}-15T12:00:00Z`;
    // A task's correction is in the task's unit; one with no task in either (credits and USD never mix).
    const unit = task ? task.unit : this.credits ? 'CREDITS' : 'USD';
    const res = await gql(
      real,
      `mutation($p: ID!, $u: Unit!, $a: Decimal!, $t: ID, $at: DateTime) { adjustLedger(projectId: $p, unit: $u, amount: $a, reason: "model", taskId: $t, effectiveAt: $at) }`,
      { p: projectId, u: unit, a: this.amount.toFixed(), t: task?.ref ?? null, at: task ? null : at },
    );
    if (task && m.gone.has(task)) {
      const refusal = res.errors?.[0];
      if (refusal?.extensions?.status !== 404 || !/archived/.test(refusal.message))
        throw new Error(`${this}: a task archived with its month must be refused (404): ${JSON.stringify(res)}`);
      return;
    }
    if (!task && at && dated < m.firstMonth()) {
      if (res.errors?.[0]?.extensions?.status !== 400)
        throw new Error(`${this}: a date before the first month of activity must be refused: ${JSON.stringify(res)}`);
      return;
    }
    if (res.errors) throw new Error(`${this}: ${JSON.stringify(res.errors)}`);
    m.adjust(projectId, unit, this.amount, task ? task.acceptedMonth : dated, task);
  }
  toString = () =>
    `adjust(project ${this.project}, ${this.amount.toFixed()}${this.credits && this.withTask === null ? ' credits' : ''}${this.withTask === null ? '' : `, task #${this.withTask}`}${this.when === 'now' ? '' : `, dated ${this.when}`})`;
}

/** A budget set (created, or its limit and kind changed) or deleted. */
export class SetBudget implements Cmd {
  constructor(
    readonly project: number,
    readonly period: 'MONTHLY' | 'LIFETIME',
    readonly scope: Scope,
    readonly limit: Decimal,
    readonly hard: boolean,
    readonly unit: Unit = 'USD',
    readonly part: Part | null = null,
  ) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const p = real.sys.projects[this.project]!;
    const value =
      this.scope === 'USER'
        ? 'u1'
        : this.scope === 'TAG'
          ? p.name === 'beta'
            ? 'team=b'
            : 'team=a'
          : this.scope === 'API_KEY'
            ? p.key.split('_')[1]!
            : null;
    const variables = {
      u: this.unit,
      p: p.id,
      l: this.limit.toFixed(),
      per: this.period,
      h: this.hard,
      s: this.scope,
      v: value,
      ms: this.part?.scope ?? null,
      mv: this.part?.value ?? null,
    };
    if (this.part && unitOfPart(this.part) !== this.unit) return this.refused(real, variables);
    const existing = [...env.model.budgets.values()].find(
      (b) =>
        b.project === p.id &&
        b.unit === this.unit &&
        b.period === this.period &&
        b.scope === this.scope &&
        b.value === value &&
        b.part?.scope === this.part?.scope &&
        b.part?.value === this.part?.value,
    );
    if (existing) {
      const res = await gql(
        real,
        `mutation($b: ID!, $l: Decimal!, $h: Boolean!) { updateBudget(budgetId: $b, limit: $l, hard: $h) }`,
        { b: existing.id, l: this.limit.toFixed(), h: this.hard },
      );
      if (res.errors) throw new Error(`${this}: ${JSON.stringify(res.errors)}`);
      existing.limit = this.limit;
      existing.hard = this.hard;
      return;
    }
    const res = await gql(real, SET_BUDGET, variables);
    if (res.errors) throw new Error(`${this}: ${JSON.stringify(res.errors)}`);
    const id = (res.data as { setBudget: string }).setBudget;
    env.model.budgets.set(id, {
      id,
      project: p.id,
      unit: this.unit,
      period: this.period,
      hard: this.hard,
      scope: this.scope,
      value,
      part: this.part,
      limit: this.limit,
    });
  }

  /** A part of the catalog priced in the other unit: a 400 naming the unit, and no budget written (§20). */
  private async refused(real: Real, variables: { p: string }) {
    // Counted as the admin: the change may be a role's (AsRole), whose reads may be narrower.
    const count = async () => {
      const token = real.token;
      real.token = real.admin;
      try {
        const res = await gql(real, `query($p: ID!) { budgetStatus(projectId: $p) { budgetId } }`, { p: variables.p });
        return (res.data as { budgetStatus: unknown[] }).budgetStatus.length;
      } finally {
        real.token = token;
      }
    };
    const before = await count();
    const res = await gql(real, SET_BUDGET, variables);
    const error = res.errors?.[0] as { message: string; extensions?: { status?: number } } | undefined;
    if (error?.extensions?.status !== 400 || !/^unit: .* is priced in /.test(error.message))
      throw new Error(`${this}: expected a 400 naming the unit, got ${JSON.stringify(res.errors ?? res.data)}`);
    expectEqual(await count(), before, `${this}: budgets after the refusal`);
  }

  toString = () =>
    `budget(${['alpha', 'beta'][this.project]}, ${this.period} ${this.scope}${this.part ? ` ${this.part.scope} ${this.part.value}` : ''}, ${this.limit.toFixed()} ${this.unit}, ${this.hard ? 'hard' : 'soft'})`;
}

const SET_BUDGET = `mutation($p: ID!, $u: Unit!, $l: Decimal!, $per: Period!, $h: Boolean!, $s: BudgetScope!, $v: String, $ms: ModelScope, $mv: String) {
  setBudget(projectId: $p, unit: $u, limit: $l, period: $per, hard: $h, scope: $s, scopeValue: $v, modelScope: $ms, modelValue: $mv) }`;

export class DeleteBudget implements Cmd {
  constructor(readonly pick: number) {}
  check = (env: Readonly<Env>) => env.model.budgets.size > 0;
  async run(env: Env, real: Real) {
    const b = pickOf([...env.model.budgets.values()], this.pick);
    const res = await gql(real, `mutation($b: ID!) { deleteBudget(budgetId: $b) }`, { b: b.id });
    if (res.errors) throw new Error(`${this}: ${JSON.stringify(res.errors)}`);
    env.model.budgets.delete(b.id);
  }
  toString = () => `delete-budget(#${this.pick})`;
}

/**
 * A task of last month, or of the month before, held through the ledger as a submission then would
 * have been (with no API key): in the `past` project, which has no budgets, or in alpha, where its
 * hold is admitted by alpha's budgets in their period of that month and by its limits (§4, §20);
 * settled then, or still open.
 */
export class PastTask implements Cmd {
  constructor(
    readonly body: Submission,
    readonly settled: boolean,
    readonly older = false,
    readonly inAlpha = false,
  ) {}
  private month = (m: MoneyModel) => (this.older ? m.older : m.previous);
  // A hold is never written into a closed month (§13), and a month's tasks came before any later month closed.
  check = (env: Readonly<Env>) => {
    const m = env.model;
    return !m.months.slice(m.months.indexOf(this.month(m))).some((x) => m.closed.has(x));
  };
  async run(env: Env, real: Real) {
    const m = env.model;
    const month = this.month(m);
    const project = this.inAlpha ? real.sys.projects[0]!.id : real.sys.past.id;
    const gw = real.sys.gateways[0]!;
    await gw.app.get(PriceBookService).refreshNow(); // a publication on the other instance, seen here
    const { unit, amount } = priceOf(this.body, m.seedream, m.imageDiscount);
    const candidate = { model: this.body.model, unit, user: null, tags: [], hold: amount };
    const answer = m.answer(project, candidate, 1, { period: month, viaKey: false });
    const held = await holdFor(gw, {
      projectId: project,
      body: request(this.body),
      acceptedAt: new Date(`${month}-10T12:00:00Z`),
    });
    const expected = { 200: 'held', 402: 'refused', 429: 'limited' }[answer];
    if (held.outcome !== expected) throw new Error(`${this}: expected ${expected}, got ${JSON.stringify(held)}`);
    if (answer !== 200) return;
    const task = m.accept({ ref: `gw-${taskIdOf(held)}`, project, ...candidate, month });
    task.vendor = 'none';
    if (this.settled) await settleInLedger(env, real, task);
  }
  toString = () =>
    `past-task(${JSON.stringify(this.body)}, ${this.settled ? 'settled' : 'open'}${this.older ? ', month before last' : ''}${this.inAlpha ? ', alpha' : ''})`;
}

/** A past month's open task settles late: a prior-period item once its month is closed (§13). */
export class LateSettle implements Cmd {
  constructor(readonly pick: number) {}
  private open = (env: Readonly<Env>) =>
    env.model.tasks.filter((t) => t.acceptedMonth !== env.model.current && t.state === 'held');
  check = (env: Readonly<Env>) => this.open(env).length > 0;
  async run(env: Env, real: Real) {
    await settleInLedger(env, real, pickOf(this.open(env), this.pick));
  }
  toString = () => `late-settle(#${this.pick})`;
}

export async function settleInLedger(env: Env, real: Real, task: Task) {
  await real.sys.gateways[0]!.app.get(LedgerService).settle({
    taskId: task.ref.slice(3),
    status: 'ready',
    charge: { unit: 'USD', exactness: 'EXACT', amount: task.hold, lines: [], warnings: [], needsReview: false },
    usage: {},
    rollup: { images: '1' },
  });
  task.vendor = 'ready';
  env.model.settle(task);
}

/** An owner publishes seedream-4.0's rates anew, effective now: tasks accepted before keep theirs (§3). */
export class PublishPrices implements Cmd {
  constructor(readonly rates: [string, string, string]) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const [r1, r2, r4] = this.rates;
    const rates = [
      ['1K', r1],
      ['2K', r2],
      ['4K', r4],
    ].map(([key, rate]) => ({ model: 'seedream-4.0', component: 'image', key, rate, unit: 'USD' }));
    const res = await gql(real, `mutation($r: [PriceRateInput!]!) { publishPrices(rates: $r, note: "model") }`, {
      r: rates,
    });
    if (res.errors) throw new Error(`${this}: ${JSON.stringify(res.errors)}`);
    env.model.seedream = { '1K': r1, '2K': r2, '4K': r4 };
  }
  toString = () => `publish-seedream(${this.rates.join('/')})`;
}

/**
 * Finance publishes a contract, effective now: a discount off every image line (kind image), or none
 * (the contract ends). Tasks accepted before keep their version's terms (decisions §19).
 */
export class PublishContract implements Cmd {
  constructor(readonly discountPercent: string | null) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const terms =
      this.discountPercent === null
        ? []
        : [{ scope: 'kind', value: 'image', unit: 'USD', discountPercent: this.discountPercent }];
    const res = await gql(real, `mutation($t: [ContractTermInput!]!) { publishContract(terms: $t, note: "model") }`, {
      t: terms,
    });
    if (res.errors) throw new Error(`${this}: ${JSON.stringify(res.errors)}`);
    env.model.imageDiscount = this.discountPercent ?? '0';
  }
  toString = () => `contract(images ${this.discountPercent ?? 'none'}%)`;
}

/** Finance commits to a USD spend for last month, carried by alpha; its close trues up the shortfall. */
export class Commit implements Cmd {
  constructor(readonly amount: string) {}
  check = (env: Readonly<Env>) => env.model.commitment === null && !env.model.closed.has(env.model.previous);
  async run(env: Env, real: Real) {
    const m = env.model;
    const project = real.sys.projects[0]!.id;
    const res = await gql(
      real,
      `mutation($p: ID!, $m: String!, $a: String!) { createCommitment(name: "model", projectId: $p, unit: USD, amount: $a, startsMonth: $m, endsMonth: $m) { id } }`,
      { p: project, m: m.previous, a: this.amount },
    );
    if (res.errors) throw new Error(`${this}: ${JSON.stringify(res.errors)}`);
    m.commitment = { project, amount: new Decimal(this.amount), month: m.previous, trued: new Decimal(0) };
  }
  toString = () => `commit(${this.amount} USD last month)`;
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
