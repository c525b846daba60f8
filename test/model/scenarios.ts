/**
 * Operations that cross features in one step, where random single steps rarely line up: a price
 * published while a task runs, a task's vendor figure taken twice (a statement, then a re-send),
 * one difference taken on both instances at once, a commitment's month closed again after a late
 * correction, a task the vendor forgets polled on both instances, and any change made by a role
 * (§11). Each is built from the single operations, so the model's rules stay in one place.
 */
import { Decimal } from 'decimal.js';
import type { Role } from '../../src/auth/permissions.js';
import { pickOf, Poll, Submit, VendorOutcome, type Cmd, type Env } from './commands.js';
import { DeleteBudget, SetBudget } from './budget-commands.js';
import { Adjust, Resolve } from './review-commands.js';
import { Commit, PublishContract, PublishPrices } from './terms-commands.js';
import { DeleteLimit, SetLimit } from './limit-commands.js';
import { CloseMonth, ReopenMonth } from './month-commands.js';
import { SetRate } from './rate-commands.js';
import { Decide, sendStatement } from './statement-commands.js';
import { ChatOutcome, ChatSubmit } from './chat-commands.js';
import type { ChatModel } from './chat-prices.js';
import type { Item, StatementLine } from './statements-model.js';
import { gql, type Real } from './real.js';

/** A seedream task accepted, new rates published, then it finishes: priced with its own version (§3). */
export class RepricedWhileRunning implements Cmd {
  constructor(
    readonly at: number,
    readonly project: number,
    readonly resolution: string,
    readonly n: number,
    readonly rates: [string, string, string],
  ) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const before = env.model.tasks.length;
    await new Submit(
      this.at,
      this.project,
      { model: 'seedream-4.0', resolution: this.resolution, n: this.n },
      0,
      0,
      null,
    ).run(env, real);
    if (env.model.tasks.length === before) return; // refused by a budget: nothing runs
    const task = env.model.tasks.at(-1)!;
    await new PublishPrices(this.rates).run(env, real);
    await fetch(`${real.sys.simUrl}/__sim/tasks/${task.ref}/complete`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'ready' }),
    });
    task.vendor = 'ready';
    await new Poll(1 - this.at, env.model.tasks.filter((t) => /^\d+$/.test(t.ref)).indexOf(task)).run(env, real);
  }
  toString = () =>
    `repriced-while-running(gw${this.at}, ${['alpha', 'beta'][this.project]}, seedream ${this.resolution} × ${this.n}, then ${this.rates.join('/')})`;
}

/** A chat task past its hold (or with no usage), settled by a poll, then resolved by an operator (§6, §10). */
export class ReviewedChat implements Cmd {
  constructor(
    readonly at: number,
    readonly model: ChatModel,
    readonly fate: 'overrun' | 'no-usage',
    readonly outcome: 'CHARGE' | 'RELEASE',
    readonly amount: Decimal | null,
  ) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const m = env.model;
    const before = m.tasks.length;
    await new ChatSubmit(this.at, 0, this.model, 12, 16, 1).run(env, real);
    if (m.tasks.length === before) return; // refused by a budget
    const task = m.tasks.at(-1)!;
    const open = m.tasks.filter((t) => t.unit === 'CREDITS' && t.vendor === 'processing' && /^\d+$/.test(t.ref));
    await new ChatOutcome(open.indexOf(task), this.fate, 3).run(env, real);
    await new Poll(1 - this.at, m.tasks.filter((t) => /^\d+$/.test(t.ref)).indexOf(task)).run(env, real);
    if (!m.underReview(task)) throw new Error(`${this}: the model put task ${task.ref} under review`);
    await new Resolve(m.tasks.filter((t) => m.underReview(t)).indexOf(task), this.outcome, this.amount).run(env, real);
  }
  toString = () =>
    `reviewed-chat(gw${this.at}, ${this.model}, ${this.fate}, ${this.outcome}${this.amount ? ` ${this.amount.toFixed()}` : ''})`;
}

/**
 * The vendor forgets a task in flight, and its client polls it on both instances: each poll is
 * answered from our record, the third "not found" makes it unknown with its hold kept (§10).
 */
export class ForgottenTask implements Cmd {
  constructor(
    readonly pick: number,
    readonly polls: number,
    readonly at: number,
  ) {}
  check = (env: Readonly<Env>) => env.model.tasks.some((t) => t.vendor === 'processing' && /^\d+$/.test(t.ref));
  async run(env: Env, real: Real) {
    const numbered = env.model.tasks.filter((t) => /^\d+$/.test(t.ref));
    const task = pickOf(
      numbered.filter((t) => t.vendor === 'processing'),
      this.pick,
    );
    await new VendorOutcome(this.pick, 'forget').run(env, real);
    for (let i = 0; i < this.polls; i++) await new Poll((this.at + i) % 2, numbered.indexOf(task)).run(env, real);
  }
  toString = () => `forgotten-task(#${this.pick}, ${this.polls} polls from gw${this.at})`;
}

/**
 * A settled task billed at its net + c1 cents, taken; billed again at + c2 more, taken: its net ends at the last figure
 * (§14).
 */
export class DisputeTwice implements Cmd {
  constructor(
    readonly pick: number,
    readonly c1: number,
    readonly c2: number,
  ) {}
  check = (env: Readonly<Env>) => unbilled(env).length > 0;
  async run(env: Env, real: Real) {
    const m = env.model;
    const task = pickOf(unbilled(env), this.pick);
    const today = new Date().toISOString().slice(0, 10);
    const at = (k: number) => `${today}T00:${String(10 + ((m.statements.count + k) % 50)).padStart(2, '0')}:07Z`;
    const first = { vendorTaskId: task.ref, at: at(0), amount: m.net(task)!.plus(new Decimal(this.c1).div(100)) };
    await this.billAndTake(env, real, first);
    await this.billAndTake(env, real, {
      ...first,
      at: at(1),
      amount: first.amount.plus(new Decimal(this.c2).div(100)),
    });
  }
  private async billAndTake(env: Env, real: Real, line: StatementLine) {
    const m = env.model;
    if (!(await sendStatement(env, real, m.statements.count % 2, [line], String(this)))) return;
    const mine = m.statements.items.filter(
      (i) => i.statement === m.statements.count && i.vendorTaskId === line.vendorTaskId && m.statements.acceptable(i),
    );
    for (const item of mine)
      await new Decide(m.statements.items.filter((i) => i.state === 'open').indexOf(item), true).run(env, real);
  }
  toString = () => `dispute-twice(#${this.pick}, ${this.c1}¢ then ${this.c2}¢ more)`;
}

const unbilled = (env: Readonly<Env>) =>
  env.model.tasks.filter(
    (t) =>
      /^\d+$/.test(t.ref) &&
      t.unit === 'USD' &&
      t.state === 'settled' &&
      !env.model.statements.lines.some((l) => l.vendorTaskId === t.ref),
  );

/** One open difference taken on both instances at once: taken once, the other answered 409, the net moved once. */
export class AcceptOnBoth implements Cmd {
  constructor(readonly pick: number) {}
  check = (env: Readonly<Env>) => env.model.statements.items.some((i) => env.model.statements.acceptable(i));
  async run(env: Env, real: Real) {
    const item = pickOf(
      env.model.statements.items.filter((i) => env.model.statements.acceptable(i)),
      this.pick,
    ) as Item & { id: string };
    const answers = await Promise.all(
      [0, 1].map((at) =>
        gql(real, `mutation($i: ID!) { acceptVendorDifference(id: $i) { state } }`, { i: item.id }, at),
      ),
    );
    const taken = answers.filter((a) => !a.errors);
    const refused = answers.filter((a) => a.errors?.[0]?.extensions?.status === 409);
    if (taken.length !== 1 || refused.length !== 1)
      throw new Error(`${this}: one accept must win and one be refused 409, got ${JSON.stringify(answers)}`);
    env.model.statements.accept(item);
  }
  toString = () => `accept-on-both(#${this.pick})`;
}

type Guarded =
  | Adjust
  | SetBudget
  | DeleteBudget
  | SetLimit
  | DeleteLimit
  | Resolve
  | CloseMonth
  | ReopenMonth
  | PublishPrices
  | PublishContract
  | SetRate
  | Decide;

/** Who may do what (decisions §11), written from its table: lead on alpha only. */
const MAY: Record<Exclude<Role, 'OWNER'>, ReadonlySet<string>> = {
  FINANCE: new Set(['budgets', 'corrections', 'books']),
  LEAD: new Set(['budgets', 'corrections']),
  VIEWER: new Set(),
};

/**
 * A commitment's month closed, reopened, moved by a late correction (a credit or a charge dated in
 * it), and closed again (§13 × §19): the close trues up what the shortfall became, so the month owes
 * the commitment or its spend, whichever is more.
 */
export class ReclosedCommitment implements Cmd {
  constructor(
    readonly amount: string,
    readonly late: Decimal,
  ) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const m = env.model;
    if (!m.commitment && !m.closed.has(m.previous)) await new Commit(this.amount).run(env, real);
    if (!m.closed.has(m.previous)) await new CloseMonth().run(env, real);
    // Refused while the month before has entries and is open: then the correction lands in an open month.
    if (m.closed.has(m.previous)) await new ReopenMonth().run(env, real);
    await new Adjust(0, this.late, null, 'last month').run(env, real);
    await new CloseMonth().run(env, real);
  }
  toString = () => `reclosed-commitment(${this.amount} USD, late ${this.late.toFixed()})`;
}

/** A change made by a finance, lead or viewer token: done where the role may, else refused 403 with nothing changed. */
export class AsRole implements Cmd {
  constructor(
    readonly role: Exclude<Role, 'OWNER'>,
    readonly inner: Guarded,
  ) {}
  check = (env: Readonly<Env>) => this.inner.check(env);
  async run(env: Env, real: Real) {
    const [what, project] = this.target(env, real);
    const may = MAY[this.role].has(what) && (this.role !== 'LEAD' || project === real.sys.projects[0]!.id);
    real.token = real.sys.roles[this.role];
    try {
      await this.inner.run(env, real);
    } catch (error) {
      if (!may && /"status":403/.test((error as Error).message)) return;
      throw error;
    } finally {
      real.token = real.admin;
    }
    if (!may) throw new Error(`${this}: a ${this.role.toLowerCase()} may not (${what}), and it was done`);
  }
  /** The capability the change needs, and the project it touches (null: every project). */
  private target(env: Env, real: Real): [string, string | null] {
    const c = this.inner;
    const projects = [...real.sys.projects.map((p) => p.id), real.sys.past.id];
    if (c instanceof Adjust) return ['corrections', projects[c.project % projects.length]!];
    if (c instanceof SetBudget) return ['budgets', projects[c.project]!];
    if (c instanceof DeleteBudget) return ['budgets', pickOf([...env.model.budgets.values()], c.pick).project];
    // Those who set budgets set limits (§20).
    if (c instanceof SetLimit) return ['budgets', projects[c.project]!];
    if (c instanceof DeleteLimit) return ['budgets', pickOf([...env.model.limits.limits.values()], c.pick).project];
    if (c instanceof Resolve)
      return [
        'corrections',
        pickOf(
          env.model.tasks.filter((t) => env.model.underReview(t)),
          c.pick,
        ).project,
      ];
    if (c instanceof CloseMonth || c instanceof Decide || c instanceof PublishContract || c instanceof SetRate)
      return ['books', null];
    return ['admin', null];
  }
  toString = () => `as-${this.role.toLowerCase()}(${this.inner})`;
}
