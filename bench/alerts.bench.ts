/**
 * `npm run bench:alerts`: webhook deliveries per second from the outbox to a local receiver with
 * two gateway instances on one embedded PostgreSQL (every instance's dispatcher claiming with
 * FOR UPDATE SKIP LOCKED), and image submissions per second at 32 connections with the
 * dispatchers idle and with them busy delivering a backlog, in one run. Prints figures and writes
 * bench/results/alerts.json; asserts nothing.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { startGateway, type Gateway } from '../src/bootstrap.js';
import { ProjectsService } from '../src/projects/projects.service.js';
import { machine, publish, speedProbe, withScratchPostgres } from './support.js';

const autocannon = createRequire(import.meta.url)('autocannon') as (
  opts: Record<string, unknown>,
) => Promise<{ requests: { average: number }; non2xx: number }>;
const EVENTS = Number(process.env.BENCH_EVENTS ?? 5_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const ADMIN = 'bench-admin-token-0123456789';

async function main() {
  let received = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const hook = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  const speedAtStart = speedProbe();

  await withScratchPostgres('alerts', ['max_connections=200'], async (pg) => {
    const start = (extra: Record<string, string> = {}) =>
      startGateway({
        DATABASE_URL: pg.url,
        PORT: '0',
        LOG_LEVEL: 'warn',
        ADMIN_TOKEN: ADMIN,
        SIMULATOR_DELAY_MS: '600000',
        POLLER_ENABLED: 'false',
        DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'spendgate-alerts-')),
        NODE_ENV: 'production',
        WEBHOOK_POLL_MS: '50',
        ...extra,
      });
    const [a, b] = [await start(), await start()];
    try {
      const projects = new ProjectsService(a.db);
      const project = await projects.create('bench');
      const key = await projects.issueKey(project.id);
      await a.db.query(
        `INSERT INTO webhook_endpoint (id, url, events, secret) VALUES (gen_random_uuid(), $1, '{}', 'whsec_' || encode(decode(md5(random()::text) || md5(random()::text), 'hex'), 'base64'))`,
        [hook],
      );

      // Events/s: a backlog written at once, delivered by both instances' dispatchers.
      const backlog = () =>
        a.db.query(
          `SELECT spendgate_emit('budget.threshold_crossed', $1, 'bench:' || gen_random_uuid(), '{"project": {"id": "x", "name": "bench"}}'::jsonb) FROM generate_series(1, $2)`,
          [project.id, EVENTS],
        );
      await backlog();
      const started = performance.now();
      while (received < EVENTS) await new Promise((r) => setTimeout(r, 20));
      const deliverySeconds = (performance.now() - started) / 1000;
      const attempts = await a.db.query<{ n: string }>('SELECT count(*)::text AS n FROM webhook_attempt');

      // Submissions with the dispatchers idle, then while they deliver a fresh backlog.
      const submit = async (label: string) => {
        const r = await autocannon({
          url: `${a.url}/api-platform/v1/generations`,
          method: 'POST',
          connections: 32,
          duration: SECONDS,
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'seedream-4.0', prompt: 'a lighthouse', resolution: '1K' }),
        });
        console.error(`${label}: ${Math.round(r.requests.average)} submissions/s, non-2xx ${r.non2xx}`);
        return Math.round(r.requests.average);
      };
      await autocannon({ url: `${a.url}/healthz`, duration: 1 }); // warm-up
      const idle = await submit('dispatchers idle');
      received = 0;
      await backlog();
      await backlog();
      const before = received;
      const busy = await submit('dispatchers delivering');
      const deliveredWhileBusy = received - before;
      const idleAgain = await submit('dispatchers idle again');

      publish('alerts', {
        machine: `${machine()}, PostgreSQL 18 embedded, defaults`,
        date: new Date().toISOString().slice(0, 10),
        instances: 2,
        events: EVENTS,
        deliveriesPerSecond: Math.round(EVENTS / deliverySeconds),
        attempts: Number(attempts.rows[0]!.n),
        submissionsPerSecond: {
          dispatchersIdle: idle,
          dispatchersBusy: busy,
          dispatchersIdleAgain: idleAgain,
          deliveredDuringBusyRun: deliveredWhileBusy,
        },
        busyVsIdle: Math.round((busy / ((idle + idleAgain) / 2)) * 100) / 100,
        machineSpeedProbeMs: { start: speedAtStart, end: speedProbe() },
      });
    } finally {
      await closeAll([b, a]);
      server.close();
    }
  });
}

async function closeAll(gateways: Gateway[]) {
  for (const gw of gateways) await gw.close();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
