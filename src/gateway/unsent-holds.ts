/**
 * Holds the database could not confirm (decisions §17). Each submission carries a reference the
 * gateway makes before its hold (task.submission_ref). When the database fails while a hold is
 * being written (a failover cuts the connection, a primary shuts down while the commit waits for
 * its synchronous standby), the hold may or may not have been committed, and this gateway knows
 * one thing for certain: it did not send the request to the vendor. So the client is answered
 * 503 naming the reference, and the reference waits here until the database answers again; then
 * whatever hold carries it is released (spendgate_release_unsent), the task rejected, its
 * Idempotency-Key freed. References are released together, in one call per round.
 *
 * If this instance stops first, a hold that was recorded stays `submitting` until the sweep marks
 * it `unknown` with its hold kept, for a person to resolve (as for any gateway that died mid-call).
 */
import { Logger } from '@nestjs/common';
import { isDatabaseUnavailable } from '../common/error.filter.js';
import { CLIENT_CHECK_INTERVAL_MS } from '../database/database.js';

export type ReleaseUnsent = (refs: string[]) => Promise<Array<{ ref: string; taskId: string }>>;

/** At most this many references in one call of the release. */
const RELEASE_BATCH = 1_000;
/**
 * The first release waits until a hold still running for a broken connection has either
 * committed or been aborted by its backend's client check (database.ts): looked for sooner, a
 * hold that commits afterwards would be missed.
 */
const FIRST_RELEASE_AFTER_MS = 2 * CLIENT_CHECK_INTERVAL_MS;

export class UnsentHolds {
  private readonly logger = new Logger('UnsentHolds');
  private readonly waiting = new Set<string>();
  private running: Promise<void> | undefined;
  private stopping = false;

  constructor(private readonly release: ReleaseUnsent) {}

  /** Remembers a reference whose hold must not stand; returns at once (the release runs in the background). */
  add(ref: string): void {
    this.waiting.add(ref);
    this.running ??= this.releaseAll();
  }

  get pending(): number {
    return this.waiting.size;
  }

  /** At shutdown: stop retrying (the sweep takes what was not released) and wait for a call under way. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.running;
    if (this.waiting.size > 0)
      this.logger.warn(
        `${this.waiting.size} unconfirmed hold(s) not released before shutdown; the sweep marks any recorded one unknown`,
      );
  }

  private async releaseAll(): Promise<void> {
    let delay = FIRST_RELEASE_AFTER_MS;
    while (this.waiting.size > 0 && !this.stopping) {
      await new Promise((r) => setTimeout(r, delay));
      const refs = [...this.waiting].slice(0, RELEASE_BATCH);
      try {
        const released = await this.release(refs);
        for (const ref of refs) this.waiting.delete(ref);
        if (released.length > 0)
          this.logger.warn(
            `released ${released.length} hold(s) recorded while the database failed, never sent to the vendor: ` +
              released.map((r) => `gw-${r.taskId}`).join(', '),
          );
        delay = FIRST_RELEASE_AFTER_MS;
      } catch (error) {
        if (!isDatabaseUnavailable(error)) {
          // Not the database's absence: retrying will not help; the sweep takes them to review.
          this.logger.error(`release of ${refs.length} unconfirmed hold(s): ${(error as Error).message}`);
          for (const ref of refs) this.waiting.delete(ref);
        }
        delay = Math.min(delay * 2, 1_000);
      }
    }
    // Set in the same turn as the loop's last check, so an add() after it starts a new round.
    this.running = undefined;
  }
}
