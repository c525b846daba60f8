/**
 * What the simulator can be told to do (its knobs: delays, faults, streaming, the seed) and their
 * defaults, and the deterministic random numbers its usage and faults are drawn from. Plain
 * TypeScript.
 */
export interface SimulatorKnobs {
  /** Time from acceptance to a terminal state. */
  delayMs: number;
  /** Added latency on every response. */
  latencyMs: number;
  /** Share of submissions answered 500 (nothing accepted). */
  errorRate: number;
  /** Share of submissions accepted but never answered (the connection is left open). */
  hangRate: number;
  /** Share of submissions accepted whose response body is not valid JSON. */
  malformedRate: number;
  /** Share of submissions accepted whose connection is then destroyed before a response. */
  resetRate: number;
  /** Share of polls answered with a malformed body. */
  pollMalformedRate: number;
  /** Share of polls answered 503. */
  pollErrorRate: number;
  /** Share of tasks that end failed. */
  failRate: number;
  /**
   * How a chat submission with `stream: true` is answered. `off`: JSON, as without stream.
   * `usage`: an event stream naming the task, text deltas, a final event with status and usage.
   * `no_usage`: the same without the final event. `cut`: the connection drops after the first
   * delta. `cut_unnamed`: it drops without the stream ever naming the task.
   */
  streamMode: 'off' | 'usage' | 'no_usage' | 'cut' | 'cut_unnamed';
  /** Polls answered as an event stream carrying the task record, instead of JSON. */
  pollStream: boolean;
  /** The usage a `usage` stream reports; null: the usual deterministic one for the task. */
  streamUsage: Record<string, unknown> | null;
  /** Silence between a stream's headers and its first event (a slow start, e.g. a long prompt). */
  streamLeadMs: number;
  seed: number;
}

export const DEFAULT_KNOBS: SimulatorKnobs = {
  delayMs: 3_000,
  latencyMs: 0,
  errorRate: 0,
  hangRate: 0,
  malformedRate: 0,
  resetRate: 0,
  pollMalformedRate: 0,
  pollErrorRate: 0,
  failRate: 0,
  streamMode: 'off',
  pollStream: false,
  streamUsage: null,
  streamLeadMs: 0,
  seed: 42,
};

/**
 * mulberry32: a small deterministic PRNG, so usage is reproducible from (seed, taskId); tests' generated histories use
 * it too.
 */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
