/**
 * The background poller, the path that settles most tasks in production, driven by the tester: one
 * poll round on an instance (PollerService.round, what its timer runs), with its sweep of abandoned
 * submissions, its shared pace and its own "not found" count, shared with clients' polls.
 *
 * The model has no clock, so two kinds of round. `poller-round` first makes every task the poller
 * would claim due (time passed: their next poll came), and polls each exactly once. `timer-round`
 * makes none due and waits a second: the schedule decides, each task polled a second after its
 * acceptance and then a poll interval on (a tenth of its age, at least POLL_INTERVAL_MS). The model's
 * gateways run with POLL_INTERVAL_MS at ten minutes, so a task polled in a round is not due again
 * within a sequence, and with the timer off (POLLER_ENABLED=false) nothing polls but these commands.
 * A poll whose slot passed while the event loop was busy is not sent (the product's rule against
 * bunching past the cap) and its task is due again at once: the round claims it again, and a next
 * round here takes any left when the first ran out of its time, as the timer's next round would.
 */
import type { Gateway } from '../../src/bootstrap.js';
import { PollerService } from '../../src/tasks/poller.service.js';
import type { Cmd, Env } from './commands.js';
import type { MoneyModel, Task } from './money-model.js';
import type { Real } from './real.js';

/** The tasks the poller claims: recorded at the vendor, unsettled, still polled (not unknown). */
const IN_FLIGHT = `settled_at IS NULL AND status = 'processing' AND next_poll_at IS NOT NULL`;
const ROUNDS = 5;

export class PollerRound implements Cmd {
  constructor(readonly at: number) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const gw = real.sys.gateways[this.at]!;
    await gw.db.query(`UPDATE task SET next_poll_at = clock_timestamp() - interval '1 second' WHERE ${IN_FLIGHT}`);
    await roundsUntilNoneDue(gw, String(this));
    polled(env.model, (t) => /^\d+$/.test(t.ref) && t.state === 'held');
  }
  toString = () => `poller-round(gw${this.at})`;
}

/**
 * A poll round as the timer runs it, no task made due: the schedule decides (§10). A task in
 * flight is first polled a second after its acceptance; once a round polled it, or the vendor
 * answered a client's poll "not found", its next poll is at least POLL_INTERVAL_MS away (ten
 * minutes here: `pollLater`), and the round leaves it, whatever the vendor would now answer.
 */
export class TimerRound implements Cmd {
  constructor(readonly at: number) {}
  check = () => true;
  async run(env: Env, real: Real) {
    await new Promise((r) => setTimeout(r, FIRST_POLL_MS + 100)); // every task accepted before is due once
    await roundsUntilNoneDue(real.sys.gateways[this.at]!, String(this));
    polled(env.model, (t) => /^\d+$/.test(t.ref) && t.state === 'held' && !t.pollLater);
  }
  toString = () => `timer-round(gw${this.at})`;
}

/** spendgate_first_poll_at: a task is first due a second after its acceptance. */
const FIRST_POLL_MS = 1_000;

/** Rounds on `gw` until no task in flight is due (a round ends after its time, as the timer's would). */
async function roundsUntilNoneDue(gw: Gateway, what: string): Promise<void> {
  const poller = gw.app.get(PollerService);
  for (let round = 0; ; round++) {
    await poller.round();
    const { rows } = await gw.db.query<{ due: number }>(
      `SELECT count(*)::int AS due FROM task WHERE ${IN_FLIGHT} AND next_poll_at <= clock_timestamp()`,
    );
    if (rows[0]!.due === 0) return;
    if (round + 1 === ROUNDS) throw new Error(`${what}: ${rows[0]!.due} tasks still due after ${ROUNDS} rounds`);
  }
}

/** The model after a round that swept and polled the tasks `polledNow` picks, once each. */
function polled(m: MoneyModel, polledNow: (t: Task) => boolean): void {
  m.sweepAbandoned();
  for (const t of m.tasks.filter(polledNow)) {
    m.settle(t);
    m.notFound(t);
    t.pollLater = true;
  }
}
