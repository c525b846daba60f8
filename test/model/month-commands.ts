/**
 * The months of the books (§13, §18): finance closes a month, an owner reopens one, and an operator
 * archives the month before last to Parquet and restores it (`spendgate archive`, its service in the
 * gateway's process: the CLI's own, as PastTask's ledger is). Months close in order, reopen latest
 * first, and an archived month is neither reopened nor changed.
 */
import { Decimal } from 'decimal.js';
import type { Gateway } from '../../src/bootstrap.js';
import { cliActor } from '../../src/cli/cli-support.js';
import { ArchiveService } from '../../src/history/archive.service.js';
import { LedgerSealer } from '../../src/ledger/ledger-sealer.js';
import { type Cmd, type Env } from './commands.js';
import { SetBudget } from './budget-commands.js';
import { PastTask, settleInLedger } from './past-commands.js';
import { Adjust } from './review-commands.js';
import { monthOf, type Part, type Submission, type Unit } from './catalog-model.js';
import type { MoneyModel } from './money-model.js';
import { gql, type GraphqlAnswer, type Real } from './real.js';

export type Which = 'last month' | 'month before last';

/** The CLI's archive service on an instance's database and configuration (cli/commands/archive.ts). */
const archives = (gw: Gateway) => ArchiveService.on(gw.db, gw.config);
const whichMonth = (m: MoneyModel, which: Which) => (which === 'last month' ? m.previous : m.older);

/** Whether the change was refused (409) as the model's `refusal` says it must be; else it must have been done. */
function refusedAsExpected(res: GraphqlAnswer, refusal: string | null, what: string): boolean {
  if (!refusal) {
    if (res.errors) throw new Error(`${what}: ${JSON.stringify(res.errors)}`);
    return false;
  }
  if (res.errors?.[0]?.extensions?.status !== 409)
    throw new Error(`${what}: ${refusal}, so it must be refused (409): ${JSON.stringify(res)}`);
  return true;
}

/** Finance closes a month: done, or refused 409 (closed already, or an earlier month with entries still open). */
export class CloseMonth implements Cmd {
  constructor(readonly which: Which = 'last month') {}
  check = () => true;
  async run(env: Env, real: Real) {
    const m = env.model;
    const month = whichMonth(m, this.which);
    const refusal = m.closeRefusal(month);
    const res = await gql(real, `mutation($m: String!) { closeMonth(month: $m) { month } }`, { m: month });
    if (refusedAsExpected(res, refusal, String(this))) return;
    m.close(month);
    env.frozen.set(month, await real.figures(month));
  }
  toString = () => `close(${this.which})`;
}

/** An owner reopens a closed month: done, or refused 409 (a later month is closed, or it is archived). */
export class ReopenMonth implements Cmd {
  constructor(readonly which: Which = 'last month') {}
  check = (env: Readonly<Env>) => env.model.closed.has(whichMonth(env.model, this.which));
  async run(env: Env, real: Real) {
    const m = env.model;
    const month = whichMonth(m, this.which);
    const refusal = m.reopenRefusal(month);
    const res = await gql(real, `mutation($m: String!) { reopenMonth(month: $m, reason: "model") }`, { m: month });
    if (refusedAsExpected(res, refusal, String(this))) return;
    m.reopen(month);
    env.frozen.delete(month);
  }
  toString = () => `reopen(${this.which})`;
}

/**
 * The month before last archived (§18): closed first if it is open, the ledger sealed, then
 * `spendgate archive`. Its files hold every task of the month; those still open, posted to later or
 * awaiting a person stay in the database.
 */
export class ArchiveOlder implements Cmd {
  /** `again`: restored at once and archived again, which must give the same files (§18) */
  constructor(readonly again = false) {}
  check = (env: Readonly<Env>) => !env.model.archived.has(env.model.older);
  async run(env: Env, real: Real) {
    const m = env.model;
    if (!m.closed.has(m.older)) await new CloseMonth('month before last').run(env, real);
    const gw = real.sys.gateways[0]!;
    await new LedgerSealer(gw.db).sealAll();
    const { actor, client } = cliActor();
    const service = archives(gw);
    let view = await service.archive(m.older, actor, client);
    if (this.again) {
      const first = JSON.stringify(view.digests);
      await service.restore(m.older, actor, client);
      view = await service.archive(m.older, actor, client);
      if (JSON.stringify(view.digests) !== first)
        throw new Error(`${this}: archived again, the files differ: ${first} then ${JSON.stringify(view.digests)}`);
    }
    m.archive(m.older);
    const mine = m.tasks.filter((t) => monthOf(t.acceptedDay) === m.older);
    const kept = mine.filter((t) => !m.gone.has(t)).length;
    if (view.tasks !== mine.length || view.keptTasks !== kept)
      throw new Error(
        `${this}: archived ${view.tasks} tasks and kept ${view.keptTasks}; the model: ${mine.length}, ${kept} kept`,
      );
  }
  toString = () => `archive(month before last${this.again ? ', restored and archived again' : ''})`;
}

/** `spendgate archive restore`: the month's rows back, a task settled since keeping its settlement. */
export class RestoreOlder implements Cmd {
  check = (env: Readonly<Env>) => env.model.archived.has(env.model.older);
  async run(env: Env, real: Real) {
    const { actor, client } = cliActor();
    await archives(real.sys.gateways[1]!).restore(env.model.older, actor, client);
    env.model.restore(env.model.older);
  }
  toString = () => 'restore(month before last)';
}

/**
 * A task of the month before last, still open when that month closes (§18 × §13): its hold is
 * carried, so the task stays in the database when the month is archived, and its late settlement,
 * before or after the archive, is a prior-period item of the first open month.
 */
export class ArchivedLateItem implements Cmd {
  private readonly task: PastTask;
  constructor(
    readonly body: Submission,
    readonly settledBeforeArchive: boolean,
    readonly inAlpha: boolean,
  ) {
    this.task = new PastTask(body, false, true, inAlpha);
  }
  check = (env: Readonly<Env>) => this.task.check(env);
  async run(env: Env, real: Real) {
    const before = env.model.tasks.length;
    await this.task.run(env, real);
    if (env.model.tasks.length === before) return; // alpha's budgets or limits refused it, as the model said
    const open = env.model.tasks.at(-1)!;
    if (this.settledBeforeArchive) {
      await new CloseMonth('month before last').run(env, real);
      await settleInLedger(env, real, open);
    }
    await new ArchiveOlder().run(env, real);
    if (!this.settledBeforeArchive) await settleInLedger(env, real, open);
  }
  toString = () =>
    `archived-late-item(${JSON.stringify(this.body)}${this.inAlpha ? ', alpha' : ''}, settled ${this.settledBeforeArchive ? 'before' : 'after'} the archive)`;
}

/**
 * A budget across an archived month (§18 × §4 × §20): alpha's task and a correction dated in the
 * month before last count in a budget of alpha (on the whole project, or on part of the catalog), and
 * still do once that month's entries are in its files: a lifetime budget's balance as the model has
 * it; a daily or weekly one's periods of that month (its task's day, its correction's) as reconcile
 * recomputes them, from what the archive kept of them (archived_balance).
 */
export class ArchivedBudgetSpend implements Cmd {
  constructor(
    readonly amount: Decimal,
    readonly unit: Unit,
    readonly part: Part | null,
    readonly period: 'LIFETIME' | 'DAILY' | 'WEEKLY' = 'LIFETIME',
  ) {}
  /** A task of the month, which also makes it a month of activity, where a correction may be dated (§16). */
  private readonly task = new PastTask({ model: 'seedream-4.0', resolution: '2K', n: 2 }, true, true, true);
  // A day's or a week's period of the month is made by the month's task: only while one can be held
  // in it, the month reopened first if it is closed (which no later month may be).
  check = (env: Readonly<Env>) => {
    const m = env.model;
    if (m.archived.has(m.older)) return false;
    return this.period === 'LIFETIME' || (!m.closed.has(m.previous) && !m.closed.has(m.current));
  };
  async run(env: Env, real: Real) {
    const limit = new Decimal(this.unit === 'CREDITS' ? 100000 : 1000);
    await new SetBudget(0, this.period, 'PROJECT', limit, false, this.unit, this.part).run(env, real);
    if (this.period !== 'LIFETIME' && env.model.closed.has(env.model.older))
      await new ReopenMonth('month before last').run(env, real);
    if (this.task.check(env)) await this.task.run(env, real);
    await new Adjust(0, this.amount, null, 'month before last', this.unit === 'CREDITS').run(env, real);
    await new ArchiveOlder().run(env, real);
  }
  toString = () =>
    `archived-budget-spend(${this.amount.toFixed()} ${this.unit}, ${this.period}${this.part ? ` budget on ${this.part.value}` : ''})`;
}
