/**
 * The main thread's share of a large read: the bytes it relays between the client and the reads
 * worker (reads-thread.ts) arrive and leave as Buffers whose memory lies outside V8's heap. They
 * die as soon as they are written, but the main thread allocates little else on its heap, so its
 * young generation rarely fills and no scavenge frees them. V8 counts that outside memory toward
 * the old generation's limit instead, and large answers set off mark-compacts of the whole main
 * thread: pauses of 3-20 ms on the thread that serves submissions, each after 15-20 ms of marking
 * on the other core (`--trace-gc` of a gateway answering 45 9,000-group reports of 2.5 MB: 12
 * mark-compacts, none of them freeing more than 7 MB of heap).
 *
 * So, once every RELAY_BYTES_PER_SCAVENGE relayed, the young generation is collected when the
 * event loop's turn ends: a scavenge of a young generation that is nearly all garbage takes ~1 ms
 * and frees the dead Buffers with it. Per 9,000-group report, the main thread's CPU went 8.1-11.7
 * -> 6.0-6.3 ms and V8's helper threads' 12.8-13.2 -> 9.8-10.0 ms (bench:reports; bench/FINDINGS.md,
 * issue 34).
 */
import v8 from 'node:v8';
import vm from 'node:vm';

/** Relayed bytes (both ways) between two scavenges: well under what V8 lets outside memory reach. */
export const RELAY_BYTES_PER_SCAVENGE = 4 * 2 ** 20;

type GcFunction = (options: { type: 'minor' | 'major'; execution?: 'sync' | 'async' }) => void;

/**
 * V8's collection of the young generation, or undefined where this V8 does not offer one.
 * The collector is V8's `gc` (exposed by node's --expose-gc); where node was started without it,
 * the flag is set only while a fresh context is made to take the function from, so no other code
 * finds a global `gc` it did not ask for.
 */
export function youngGenerationCollector(): (() => void) | undefined {
  let gc = (globalThis as { gc?: GcFunction }).gc;
  if (typeof gc !== 'function') {
    try {
      v8.setFlagsFromString('--expose-gc');
      gc = vm.runInNewContext('typeof gc === "function" ? gc : undefined') as GcFunction | undefined;
    } catch {
      gc = undefined;
    } finally {
      v8.setFlagsFromString('--no-expose-gc');
    }
  }
  if (typeof gc !== 'function') return undefined;
  const collect = gc;
  return () => collect({ type: 'minor' });
}

/** Counts relayed bytes and collects the young generation once enough of them are garbage. */
export class RelayedGarbage {
  private bytes = 0;
  private scheduled = false;

  constructor(
    private readonly collect: (() => void) | undefined = youngGenerationCollector(),
    private readonly bytesPerScavenge = RELAY_BYTES_PER_SCAVENGE,
  ) {}

  /** A relay finished (or was cut off) after moving `bytes`; past the bound, one scavenge follows this turn. */
  relayed(bytes: number): void {
    if (!this.collect || !(bytes > 0)) return;
    this.bytes += bytes;
    if (this.bytes < this.bytesPerScavenge || this.scheduled) return;
    this.scheduled = true;
    // After the turn: the reply's last writes are done and nothing of this request is still in use.
    setImmediate(() => {
      this.scheduled = false;
      this.bytes = 0;
      this.collect!();
    });
  }
}
