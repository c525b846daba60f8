/**
 * The background poller, the path that settles most tasks in production, driven by the tester: one
 * poll round on an instance (PollerService.round, what its timer runs), with its sweep of abandoned
 * submissions, its shared pace and its own "not found" count, shared with clients' polls.
 *
 * The model has no clock: a round polls every task in flight exactly once. Two settings and one
 * statement make the product's round do that. Before the round, every task the poller would claim
 * is made due (time passed: their next poll came). The model's gateways run with POLL_INTERVAL_MS at
 * ten minutes, so a task polled in the round is not due again in it (its next poll is at least nine
 * minutes away), and with the timer off (POLLER_ENABLED=false) nothing polls but this command. A
 * poll whose slot passed while the event loop was busy is not sent (the product's rule against
 * bunching past the cap) and its task is due again at once: the round claims it again, and a next
 * round here takes any left when the first ran out of its time, as the timer's next round would.
 */
import { PollerService } from '../../src/tasks/poller.service.js';
import type { Cmd, Env } from './commands.js';
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
    const poller = gw.app.get(PollerService);
    for (let round = 0; ; round++) {
      await poller.round();
      const { rows } = await gw.db.query<{ due: number }>(
        `SELECT count(*)::int AS due FROM task WHERE ${IN_FLIGHT} AND next_poll_at <= clock_timestamp()`,
      );
      if (rows[0]!.due === 0) break;
      if (round + 1 === ROUNDS) throw new Error(`${this}: ${rows[0]!.due} tasks still due after ${ROUNDS} rounds`);
    }
    const m = env.model;
    m.sweepAbandoned();
    for (const t of m.tasks.filter((x) => /^\d+$/.test(x.ref) && x.state === 'held')) {
      m.settle(t);
      m.notFound(t);
    }
  }
  toString = () => `poller-round(gw${this.at})`;
}
