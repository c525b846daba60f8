/**
 * At most `limit` reads (GraphQL operations, CSV reports) run at once in this instance; the rest
 * wait their turn, and one that waited `maxWaitMs` is told the instance is busy (503). Reads share
 * the event loop with submissions: bounding how many run at once bounds how much of it they take.
 */
export class ReadGate {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly limit: number,
    private readonly maxWaitMs: number,
  ) {}

  /** Resolves with a release function once a slot is free; false when none freed in time. */
  async enter(): Promise<(() => void) | false> {
    if (this.running < this.limit) return this.slot();
    return new Promise((resolve) => {
      const turn = () => {
        clearTimeout(timer);
        resolve(this.slot());
      };
      const timer = setTimeout(() => {
        const at = this.waiting.indexOf(turn);
        if (at >= 0) this.waiting.splice(at, 1);
        resolve(false);
      }, this.maxWaitMs);
      this.waiting.push(turn);
    });
  }

  get busy(): number {
    return this.running;
  }

  private slot(): () => void {
    this.running += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running -= 1;
      this.waiting.shift()?.();
    };
  }
}
