/**
 * Writes that must land after the vendor has acted. Once the vendor accepted (or refused) a task,
 * its answer is a fact the ledger has to record; if the database is briefly unavailable (a
 * restart, a failover), giving up would leave the task `submitting` and, after the sweep,
 * `unknown` with its hold, or worse, tell the client to retry and so create a second vendor task.
 *
 * So such a write is retried while the database is unavailable: the caller waits up to a window
 * (its client is still connected), then the write goes on in the background until it lands or
 * this instance stops (the sweep then takes the task to `unknown`, hold kept, for review).
 * Any other error is the write's own answer and is returned at once.
 */
import { Logger } from '@nestjs/common';
import { isDatabaseUnavailable } from '../common/error.filter.js';

export type Landed<T> = { landed: true; value: T } | { landed: false };

export class LandingWrites {
  private readonly logger = new Logger('LandingWrites');
  private readonly background = new Set<Promise<unknown>>();
  private stopping = false;

  constructor(private readonly windowMs: number) {}

  /** Runs `write`; while the database is unavailable, retries it. Resolves when it landed or the window passed. */
  async land<T>(what: string, write: () => Promise<T>): Promise<Landed<T>> {
    try {
      return { landed: true, value: await write() };
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
    }
    let resolveCaller!: (outcome: Landed<T>) => void;
    let rejectCaller!: (error: unknown) => void;
    const forCaller = new Promise<Landed<T>>((resolve, reject) => {
      resolveCaller = resolve;
      rejectCaller = reject;
    });
    const window = setTimeout(() => resolveCaller({ landed: false }), this.windowMs);
    const retrying = this.retry(what, write).then(
      (value) => resolveCaller({ landed: true, value }),
      (error) => rejectCaller(error),
    );
    const tracked = retrying.finally(() => {
      clearTimeout(window);
      this.background.delete(tracked);
    });
    this.background.add(tracked);
    return forCaller;
  }

  /** At shutdown: stop retrying (the sweep takes what did not land) and wait for attempts under way. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.allSettled([...this.background]);
  }

  get pending(): number {
    return this.background.size;
  }

  private async retry<T>(what: string, write: () => Promise<T>): Promise<T> {
    let delay = 100;
    for (;;) {
      await new Promise((r) => setTimeout(r, delay));
      if (this.stopping) throw new Error(`${what}: not recorded before shutdown; the sweep marks it unknown`);
      try {
        return await write();
      } catch (error) {
        if (!isDatabaseUnavailable(error)) {
          this.logger.error(`${what}: ${(error as Error).message}`);
          throw error;
        }
      }
      delay = Math.min(delay * 2, 1_000);
    }
  }
}
