/**
 * Group commit: callers push one item each; items that arrive while a batch is being written
 * are written together in the next one. At low load a batch is a single item (no added delay);
 * under load one database round trip and one commit serve many requests.
 *
 * One bad item must not fail its neighbours: when a batch's write fails with an error that
 * `isolate` says belongs to the data (a constraint a single row broke, say), each item is written
 * again on its own, so only the bad one gets the error. Errors of the connection itself (the
 * database is gone) fail the whole batch at once: writing item by item would not help.
 */
export class Batcher<I, O> {
  private queue: Array<{ item: I; resolve: (o: O) => void; reject: (e: unknown) => void }> = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly write: (items: I[]) => Promise<O[]>,
    private readonly maxBatch = 256,
    private readonly maxInFlight = 2,
    private readonly isolate: (error: unknown) => boolean = () => false,
    /**
     * A batch goes out beside those in flight only when at least this many items wait (fewer
     * wait for one to finish and go together); with nothing in flight, twice as many go out as
     * two halves, one right behind the other. For writes whose first part runs in parallel and
     * whose last part is serial (holds: rows written, then the project's lock), the second batch
     * does its parallel part while the first holds the serial one; at low load, where batches
     * are a request or two, it stays one batch at a time. 1: any free slot takes what waits.
     */
    private readonly pipelineFrom = 1,
  ) {}

  push(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private mayFlush(): boolean {
    if (this.queue.length === 0 || this.inFlight >= this.maxInFlight) return false;
    return this.inFlight === 0 || this.queue.length >= this.pipelineFrom;
  }

  private schedule(): void {
    if (this.scheduled || !this.mayFlush()) return;
    this.scheduled = true;
    // setImmediate lets every request parsed in this turn of the event loop join the batch.
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (!this.mayFlush()) return;
    const split = this.inFlight === 0 && this.pipelineFrom > 1 && this.maxInFlight > 1 && this.queue.length >= 2 * this.pipelineFrom;
    const batch = this.queue.splice(0, Math.min(this.maxBatch, split ? Math.ceil(this.queue.length / 2) : this.queue.length));
    this.inFlight += 1;
    // What is left (half a burst, or more than maxBatch) goes out now if another batch may.
    this.schedule();
    try {
      const results = await this.write(batch.map((b) => b.item));
      batch.forEach((b, i) => b.resolve(results[i]!));
    } catch (error) {
      if (batch.length > 1 && this.isolate(error)) {
        await Promise.all(batch.map((b) => this.write([b.item]).then((r) => b.resolve(r[0]!), b.reject)));
      } else {
        batch.forEach((b) => b.reject(error));
      }
    } finally {
      this.inFlight -= 1;
      this.schedule();
    }
  }
}
