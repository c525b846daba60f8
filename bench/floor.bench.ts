/**
 * `npm run bench:floor`: the least CPU a submission can cost on this machine at an ordinary rate
 * while keeping the submission path's promises (the hold durable before the vendor is called, the acceptance
 * durable before the client hears), so that spendgate's figure can be read against it. In one run,
 * open loop at BENCH_FLOOR_RATE (default 500) requests a second, chat bodies to the upstream
 * simulator, each target its own process:
 *   - the skeleton gateway (floor-skeleton.ts) as a bare proxy, with the hold's commit only, and
 *     with both commits: node's HTTP server, prepared statements, one-row writes, nothing else;
 *     and with both commits writing the rows spendgate's books write (floor-books.ts);
 *   - Portkey (a Node AI gateway that keeps no ledger) and spendgate (everything in the path).
 * CPU per request is the target's process plus PostgreSQL's (postmaster and backends), as
 * bench:gateway reads it. BENCH_ROUNDS (default 2) rounds, alternated. Prints figures and writes
 * bench/results/floor.json; asserts nothing.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { freePort } from '../src/database/embedded.js';
import { openLoopRun, OPEN_LOOP_SECONDS } from './open-loop.js';
import { BenchServers, CHAT, benchProject, waitFor } from './servers.js';
import { machine, publish, speedProbe, withScratchPostgres } from './support.js';

const RATE = Number(process.env.BENCH_FLOOR_RATE ?? 500);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CHAT_PATH = '/api-platform/v1/chat/completions';

const servers = new BenchServers();

interface Target {
  name: string;
  pid: number;
  url: string;
  headers: Record<string, string>;
}

async function main() {
  const speedAtStart = speedProbe();
  await withScratchPostgres('floor', [], async (server, dir) => {
    try {
      const postgres = Number(readFileSync(path.join(dir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
      const client = new pg.Client(server.url);
      await client.connect();
      await client.query(
        `CREATE TABLE floor_task (id bigserial PRIMARY KEY, status text NOT NULL, request int, answer int, at timestamptz NOT NULL DEFAULT now())`,
      );
      await client.end();
      const { key } = await benchProject(server.url, 'floor');

      const simPort = await freePort();
      const sim = `http://127.0.0.1:${simPort}`;
      servers.simulator(simPort);
      await waitFor(`${sim}/__sim/tasks`);
      const vendorAuth = { authorization: 'Bearer bench-vendor-key' };
      const targets: Target[] = [];
      const books = await benchProject(server.url, 'floor-books');
      for (const [commits, name, extra] of [
        [0, 'skeleton: a bare proxy', {}],
        [1, 'skeleton: the hold committed', {}],
        [2, 'skeleton: hold and acceptance committed', {}],
        [2, "skeleton: the books' rows, two commits", { FLOOR_BOOKS: '1', FLOOR_PROJECT: books.projectId }],
      ] as const) {
        const p = await freePort();
        const { pid } = servers.start(['dist/bench/floor-skeleton.js'], {
          PORT: String(p),
          DATABASE_URL: server.url,
          UPSTREAM: `${sim}${CHAT_PATH}`,
          FLOOR_COMMITS: String(commits),
          ...extra,
        });
        targets.push({ name, pid: pid!, url: `http://127.0.0.1:${p}${CHAT_PATH}`, headers: {} });
      }
      const portkeyPort = await freePort();
      targets.push({
        name: 'portkey',
        pid: servers.portkey(portkeyPort).pid!,
        url: `http://127.0.0.1:${portkeyPort}/v1/chat/completions`,
        headers: { ...vendorAuth, 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `${sim}/api-platform/v1` },
      });
      const gatewayPort = await freePort();
      targets.push({
        name: 'spendgate',
        pid: servers.start(['dist/src/main.js'], {
          PORT: String(gatewayPort),
          DATABASE_URL: server.url,
          UPSTREAM_BASE_URL: sim,
          UPSTREAM_API_KEY: 'bench-vendor-key',
          ADMIN_TOKEN: 'bench-admin-token-0123456789',
          LOG_LEVEL: 'warn',
          POLLER_ENABLED: 'false',
          NODE_ENV: 'production',
        }).pid!,
        url: `http://127.0.0.1:${gatewayPort}${CHAT_PATH}`,
        headers: { authorization: `Bearer ${key}` },
      });
      for (const t of targets)
        await waitFor(t.url.replace(/\/(api-platform|v1)\/.*$/, t.name === 'spendgate' ? '/healthz' : '/'));

      const runs: Array<{
        round: number;
        target: string;
        p50Ms: number;
        p99Ms: number;
        non200: number;
        targetMs: number;
        postgresMs: number;
        totalMs: number;
      }> = [];
      for (let round = 1; round <= ROUNDS; round++) {
        // Alternated: forwards in odd rounds, backwards in even ones, so drift in the machine's speed falls on every
        // target alike.
        for (const t of round % 2 ? targets : [...targets].reverse()) {
          const r = await openLoopRun(t.name, t.url, t.headers, CHAT, RATE, { target: t.pid, postgres });
          const targetMs = r.cpuMsPerRequest.target ?? 0;
          const postgresMs =
            t.name === 'portkey' || t.name.endsWith('bare proxy') ? 0 : (r.cpuMsPerRequest.postgres ?? 0);
          runs.push({
            round,
            target: t.name,
            p50Ms: r.p50Ms,
            p99Ms: r.p99Ms,
            non200: r.non200,
            targetMs,
            postgresMs,
            totalMs: Math.round((targetMs + postgresMs) * 1000) / 1000,
          });
        }
      }
      publish('floor', {
        machine: `${machine()}, node ${process.version}, PostgreSQL 18 embedded (defaults: fsync on)`,
        date: new Date().toISOString().slice(0, 10),
        offeredPerSecond: RATE,
        secondsPerRun: OPEN_LOOP_SECONDS,
        notes:
          "CPU ms per request: the target process, plus PostgreSQL (all its processes) for the targets that write; Portkey and the bare proxy write nothing, and what PostgreSQL spends meanwhile (spendgate idle) is not theirs. The books' rows skeleton falls behind 500/s whenever a commit's flush takes over 2 ms (one balance row, locked until each commit): read its CPU only where its p50 stays in milliseconds",
        machineSpeedProbeMs: { start: speedAtStart, end: speedProbe() },
        runs,
        target: { cpuMsPerSubmission: 0.4 },
      });
    } finally {
      await servers.stop();
    }
  });
}

main().catch((error) => {
  console.error(error);
  servers.kill('SIGKILL');
  process.exit(1);
});
