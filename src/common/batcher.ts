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
  ) {}

  push(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.maxInFlight || this.queue.length === 0) return;
    this.scheduled = true;
    // setImmediate lets every request parsed in this turn of the event loop join the batch.
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (this.inFlight >= this.maxInFlight || this.queue.length === 0) return;
    const batch = this.queue.splice(0, this.maxBatch);
    this.inFlight += 1;
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
