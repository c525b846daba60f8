/**
 * A background round run again `intervalMs` after each one ends (never two at once), until
 * stopped: the poller's and the webhook dispatcher's loop. A failed round is logged, not fatal.
 */
import type { Logger } from '@nestjs/common';

export class Repeating {
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;
  private stopped = false;

  constructor(
    private readonly round: () => Promise<unknown>,
    private readonly intervalMs: number,
    private readonly logger: Logger,
    private readonly what: string,
  ) {}

  /** The first round after `firstAfterMs` (0: at once). */
  start(firstAfterMs = 0): void {
    const loop = () => {
      if (this.stopped) return;
      this.running = this.round()
        .catch((error) => this.logger.warn(`${this.what} failed: ${(error as Error).message}`))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(loop, this.intervalMs);
        });
    };
    this.timer = setTimeout(loop, firstAfterMs);
  }

  /** No new round starts; resolves when the one running has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }
}
