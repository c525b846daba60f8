/**
 * `npm run bench:pg-versions`: spendgate's submissions on the embedded PostgreSQL 18 and on the
 * machine's PostgreSQL 15 (POSTGRES_BIN_DIR, default Debian's /usr/lib/postgresql/15/bin), side by
 * side in one run (decisions §17): chat at 64 connections, then the media mix, on a fresh
 * database each time, the versions alternating (18, 15, 18, 15) so the machine's drift between
 * minutes falls on both. Default durability (fsync on) on both. Prints figures, writes
 * bench/results/postgres-versions.json; asserts nothing.
 */
import { createRequire } from 'node:module';
import { freePort } from '../src/database/embedded.js';
import { BenchServers, CHAT, MEDIA, benchProject, waitFor } from './servers.js';
import { machine, publish, speedProbe, withScratchPostgres } from './support.js';

const autocannon = createRequire(import.meta.url)('autocannon') as (opts: Record<string, unknown>) => Promise<{
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  non2xx: number;
}>;

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const PG15 = process.env.POSTGRES_BIN_DIR ?? '/usr/lib/postgresql/15/bin';

async function run(url: string, key: string, bodies: string[]) {
  const opts = {
    url,
    method: 'POST',
    connections: 64,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    ...(bodies.length === 1 ? { body: bodies[0] } : { requests: bodies.map((body) => ({ method: 'POST', body })) }),
  };
  await autocannon({ ...opts, duration: 2 }); // warm-up
  const r = await autocannon({ ...opts, duration: SECONDS });
  return {
    requestsPerSecond: Math.round(r.requests.average),
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    non2xx: r.non2xx,
  };
}

async function onVersion(label: '18' | '15') {
  if (label === '15') process.env.POSTGRES_BIN_DIR = PG15;
  else delete process.env.POSTGRES_BIN_DIR;
  return withScratchPostgres(`pg${label}`, [], async (pg) => {
    const servers = new BenchServers();
    try {
      const { key } = await benchProject(pg.url, 'bench');
      const [simPort, gatewayPort] = [await freePort(), await freePort()];
      servers.simulator(simPort);
      servers.spendgate(gatewayPort, pg.url, simPort);
      await waitFor(`http://127.0.0.1:${simPort}/__sim/tasks`);
      await waitFor(`http://127.0.0.1:${gatewayPort}/healthz`);
      const { rows } = await import('pg').then(async ({ default: pgLib }) => {
        const c = new pgLib.Client({ connectionString: pg.url });
        await c.connect();
        try {
          return await c.query<{ v: string }>("SELECT current_setting('server_version') AS v");
        } finally {
          await c.end();
        }
      });
      const base = `http://127.0.0.1:${gatewayPort}/api-platform/v1`;
      const chat = await run(`${base}/chat/completions`, key, [CHAT]);
      const media = await run(`${base}/generations`, key, MEDIA);
      const row = { postgres: rows[0]!.v, chat, media };
      console.error(`PostgreSQL ${row.postgres}: ${JSON.stringify({ chat, media })}`);
      return row;
    } finally {
      await servers.stop();
    }
  });
}

async function main() {
  const speedAtStart = speedProbe();
  const runs = [];
  for (const label of ['18', '15', '18', '15'] as const) runs.push(await onVersion(label));
  publish('postgres-versions', {
    machine: `${machine()}, node ${process.version}, fsync on`,
    date: new Date().toISOString(),
    seconds: SECONDS,
    speedProbeMs: { start: speedAtStart, end: speedProbe() },
    runs,
  });
}

await main();
