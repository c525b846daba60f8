/**
 * A second batch beside one in flight (`BatcherOptions.pipeline`): worth it when the write's
 * first part runs in parallel and its last part is serial (a hold writes its rows, then takes its
 * project's lock), so the second batch does the first part while the one ahead holds the lock.
 * Not worth it when every core is busy already (other lanes each writing a batch): then it only
 * halves the batches and doubles their fixed cost. `slots` is shared by the batchers of those
 * lanes: a lane's first batch always goes; a second one only while fewer than `max` are in flight
 * in all of them together (a lane looks again at its next push or finished batch).
 */
export interface Pipeline {
  /**
   * A second batch goes only when at least this many items wait; twice as many, with none in flight, go out as two
   * halves.
   */
  from: number;
  slots: { inFlight: number; readonly max: number };
}

export interface BatcherOptions {
  maxBatch?: number;
  maxInFlight?: number;
  /** Whether a failed batch's error belongs to one item's data: then each item is written alone. */
  isolate?: (error: unknown) => boolean;
  /** Without it, any free slot (up to maxInFlight) takes what waits. */
  pipeline?: Pipeline;
}

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
  private readonly maxBatch: number;
  private readonly maxInFlight: number;
  private readonly isolate: (error: unknown) => boolean;
  private readonly pipeline: Pipeline | undefined;

  constructor(
    private readonly write: (items: I[]) => Promise<O[]>,
    options: BatcherOptions = {},
  ) {
    this.maxBatch = options.maxBatch ?? 256;
    this.maxInFlight = options.maxInFlight ?? 2;
    this.isolate = options.isolate ?? (() => false);
    this.pipeline = options.pipeline;
  }

  push(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private mayFlush(): boolean {
    if (this.queue.length === 0 || this.inFlight >= this.maxInFlight) return false;
    if (this.inFlight === 0 || !this.pipeline) return true;
    return this.queue.length >= this.pipeline.from && this.pipeline.slots.inFlight < this.pipeline.slots.max;
  }

  /** With nothing in flight, a large enough burst goes out as two halves if a second batch may go. */
  private takesHalf(): boolean {
    const p = this.pipeline;
    return (
      !!p &&
      this.inFlight === 0 &&
      this.maxInFlight > 1 &&
      this.queue.length >= 2 * p.from &&
      p.slots.inFlight + 2 <= p.slots.max
    );
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
    const take = this.takesHalf() ? Math.ceil(this.queue.length / 2) : this.queue.length;
    const batch = this.queue.splice(0, Math.min(this.maxBatch, take));
    this.started(1);
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
      this.started(-1);
      this.schedule();
    }
  }

  private started(n: 1 | -1): void {
    this.inFlight += n;
    if (this.pipeline) this.pipeline.slots.inFlight += n;
  }
}
