/**
 * `npm run bench:hold-batches`: what a hold costs PostgreSQL's backend per request, alone
 * (spendgate_hold_one) and in batches of BENCH_BATCH_SIZES (default 1,2,3,4,8; spendgate_place_holds),
 * the question behind bench:floor's ratio (bench/FINDINGS.md): how much of a hold is the
 * commit's fixed cost, shared by a batch, and how much each request adds. One connection, durable
 * commits, one project with two hard budgets (hold-probe.ts), each call after BENCH_GAP_MS
 * (default 2) so that it wakes an idle backend as an ordinary load does. The shapes run in
 * interleaved blocks of about 48 requests (BENCH_BLOCKS, default 20, forwards then backwards), so
 * that the machine's drift within the run falls on every shape alike; the figure is the median
 * over blocks of the backend's CPU (/proc/<pid>/schedstat) per request. Prints figures and writes
 * bench/results/hold-batches.json; asserts nothing.
 */
import { Database } from '../src/database/database.js';
import { holdAlone, holdInBatch } from '../src/ledger/holds.js';
import { holdProbe } from './hold-probe.js';
import { runNs } from './proc.js';
import { machine, median, publish, speedProbe, withScratchPostgres } from './support.js';

const SIZES = (process.env.BENCH_BATCH_SIZES ?? '1,2,3,4,8').split(',').map(Number);
const BLOCKS = Number(process.env.BENCH_BLOCKS ?? 20);
const GAP_MS = Number(process.env.BENCH_GAP_MS ?? 2);
const REQUESTS_PER_BLOCK = 48;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const speedAtStart = speedProbe();
  await withScratchPostgres('hold-batches', [], async (server) => {
    const db = new Database(server.url, 1);
    const backend = (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const { request } = await holdProbe(db);
    // The first hold of a period makes its balance (the batch function's work, not the one-request one's).
    await holdInBatch(db, [request()]);

    // A shape is the number of requests a call holds; 0: one request alone, through spendgate_hold_one.
    const shapes = [0, ...SIZES];
    const name = (size: number) => (size ? `batch of ${size}` : 'alone');
    const hold = async (size: number): Promise<void> => {
      if (!size) {
        if ((await holdAlone(db, request()))?.outcome !== 'held') throw new Error('a hold alone was not held');
        return;
      }
      const outcomes = await holdInBatch(db, Array.from({ length: size }, request));
      if (outcomes.some((o) => o.outcome !== 'held')) throw new Error(`a hold in a ${name(size)} was not held`);
    };
    for (const size of shapes) for (let i = 0; i < 20; i++) await hold(size); // plans cached, pages in memory

    const perRequestUs = new Map<number, number[]>(shapes.map((s) => [s, []]));
    for (let block = 0; block < BLOCKS; block++) {
      for (const size of block % 2 ? [...shapes].reverse() : shapes) {
        const calls = Math.max(1, Math.round(REQUESTS_PER_BLOCK / (size || 1)));
        const before = runNs(backend);
        for (let i = 0; i < calls; i++) {
          await sleep(GAP_MS);
          await hold(size);
        }
        perRequestUs.get(size)!.push((runNs(backend) - before) / (calls * (size || 1)) / 1000);
      }
    }
    const alone = perRequestUs.get(0)!;
    const results = Object.fromEntries(
      shapes.map((size) => {
        const us = perRequestUs.get(size)!;
        const row = {
          backendUsPerRequest: Math.round(median(us) * 10) / 10,
          toAlone: Math.round(median(us.map((x, i) => x / alone[i]!)) * 1000) / 1000,
        };
        console.error(
          `hold ${name(size)}: backend ${row.backendUsPerRequest} µs a request (${row.toAlone} of alone, block by block)`,
        );
        return [name(size), row];
      }),
    );
    publish('hold-batches', {
      machine: `${machine()}, node ${process.version}, PostgreSQL 18 embedded (defaults: fsync on)`,
      date: new Date().toISOString().slice(0, 10),
      blocks: BLOCKS,
      gapMs: GAP_MS,
      machineSpeedProbeMs: { start: speedAtStart, end: speedProbe() },
      perRequest: results,
    });
    await db.close();
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
