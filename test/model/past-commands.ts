/**
 * Tasks of past months (decisions §13, §16): held through the CLI's ledger as a submission then
 * would have been, and settled then or late, when their month may be closed.
 */
import { LedgerService } from '../../src/ledger/ledger.service.js';
import { PriceBookService } from '../../src/pricing/price-book.service.js';
import { holdFor, taskIdOf } from '../support/builders.js';
import { monthOf, priceOf, type Submission } from './catalog-model.js';
import { pickOf, request, type Cmd, type Env } from './commands.js';
import { minuteOf } from './limits-model.js';
import type { MoneyModel, Task } from './money-model.js';
import type { Real } from './real.js';

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
    const { unit, amount } = priceOf(this.body, m.seedream, m.contract);
    const candidate = { model: this.body.model, unit, user: null, tags: [], hold: amount };
    const day = `${month}-10`;
    const acceptedAt = new Date(`${day}T12:00:00Z`);
    const minute = minuteOf(acceptedAt.getTime());
    const answer = m.answer(project, candidate, 1, { day, viaKey: false, minute });
    const held = await holdFor(gw, { projectId: project, body: request(this.body), acceptedAt });
    const expected = { 200: 'held', 402: 'refused', 429: 'limited' }[answer];
    if (held.outcome !== expected) throw new Error(`${this}: expected ${expected}, got ${JSON.stringify(held)}`);
    if (answer !== 200) return;
    const task = m.accept({ ref: `gw-${taskIdOf(held)}`, project, ...candidate, day, minute });
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
    env.model.tasks.filter((t) => monthOf(t.acceptedDay) !== env.model.current && t.state === 'held');
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
