/**
 * The open-loop load generator bench:gateway and bench:floor share: requests sent at a fixed
 * rate whatever the answers do (no coordinated omission), each timed from when it was due.
 */
import { Pool } from 'undici';
import { AnswerHandler } from '../src/upstream/answer-handler.js';
import { procDelta, procReading, type Servers } from './proc.js';

/** Seconds measured per run (BENCH_SECONDS, default 10), after a 2 s warm-up. */
export const OPEN_LOOP_SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
/** Connections the generator may open: enough that a slow answer never holds back the next request. */
export const OPEN_LOOP_CONNECTIONS = 64;

/**
 * Uniform open loop: request i is due at start + i / rate; latency counts from that due time.
 * A warm-up of 2 s, then OPEN_LOOP_SECONDS measured, with each server's CPU (`servers`) read around them.
 */
export async function openLoopRun(
  name: string,
  url: string,
  headers: Record<string, string>,
  body: string,
  rate: number,
  servers: Servers,
  server?: { before: () => Promise<void>; after: () => Promise<Record<string, unknown>> },
) {
  const pool = new Pool(new URL(url).origin, { connections: OPEN_LOOP_CONNECTIONS });
  const path = new URL(url).pathname;
  const requestHeaders = { 'content-type': 'application/json', ...headers };
  // The gateway's own answer handler over undici's dispatch, not pool.request(): request()'s
  // per-request closures keep ~2.3 MB/s alive through minor GCs (see src/upstream/answer-handler.ts),
  // and the generator's own GC pauses would land in the latencies it measures.
  const send = () =>
    new Promise<number>((resolve) => {
      pool.dispatch(
        { method: 'POST', path, headers: requestHeaders, body },
        new AnswerHandler(
          null,
          (answer) => resolve(answer.status),
          () => resolve(0),
        ),
      );
    });
  const run = async (seconds: number) => {
    const total = seconds * rate;
    // Preallocated, and no array of every request's promise: the generator's own garbage
    // collections would otherwise grow with the run and land in the latencies it measures.
    const latencies = new Float64Array(total);
    let failures = 0;
    let answered = 0;
    let allAnswered!: () => void;
    const done = new Promise<void>((resolve) => (allAnswered = resolve));
    if (total === 0) allAnswered();
    const start = performance.now();
    for (let i = 0; i < total; i++) {
      const due = start + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      // Timed from the due time when the request leaves late (no coordinated omission), from the
      // send when timer granularity (~1 ms) lets it leave early (else latencies read too low).
      const from = Math.min(due, performance.now());
      void send().then((status) => {
        latencies[i] = performance.now() - from;
        if (status !== 200) failures++;
        if (++answered === total) allAnswered();
      });
    }
    await done;
    latencies.sort();
    const at = (q: number) =>
      Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]! * 100) / 100;
    return { offeredPerSecond: rate, sent: total, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: at(1), non200: failures };
  };
  await run(2); // warm-up
  await server?.before();
  const before = procReading(servers);
  const result = await run(OPEN_LOOP_SECONDS);
  const { cpuMsPerRequest, runqueueWaitMsPerSecond, machinePercent } = procDelta(
    before,
    procReading(servers),
    result.sent,
  );
  const inside = await server?.after();
  await pool.close();
  console.error(
    `${name} (uniform ${rate} req/s): p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms, non-200 ${result.non200}; CPU ms per request ${JSON.stringify(cpuMsPerRequest)}; machine % ${JSON.stringify(machinePercent)}`,
  );
  if (inside) console.error(`  measured inside spendgate (its /metrics histogram): ${JSON.stringify(inside)}`);
  return {
    name: `${name} (uniform open loop ${rate} req/s)`,
    ...result,
    cpuMsPerRequest,
    runqueueWaitMsPerSecond,
    machinePercent,
    ...(inside ? { insideSpendgate: inside } : {}),
  };
}
