/**
 * A PostgreSQL restart while tasks are being polled (decisions §17): 600 tasks
 * in flight at a vendor that takes 30 s, polled by two production gateways (`npm start`'s entry,
 * child processes); PostgreSQL stopped at once (SIGQUIT: an immediate shutdown) for 5 s, then
 * started again. Before the fix both gateways died of an unhandled rejection from a poll's
 * pollAgainIn; now both keep answering (503 while the database is away, 200 after) and money stays
 * right. And a connection that dies inside a transaction (between two statements) no longer
 * emits an 'error' event nobody listens to (which ends a process; seen once in test/gateway/outage.test.ts
 * on a loaded machine).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/database/embedded.js';
import { migrate } from '../../src/database/migrate.js';
import { Database } from '../../src/database/database.js';
import { reconcile } from '../../src/ledger/reconcile.js';
import { ProjectsService } from '../../src/projects/projects.service.js';
import { createSimulator } from '../../src/simulator/simulator.js';
import { alive } from '../model/system.js';
import { ADMIN, eventually, freshDatabase, http, spawnGateway, type ChildGateway } from '../support/harness.js';

const VENDOR_KEY = 'vk-restart-0123456789';
const IMAGE = { model: 'seedream-4.0', prompt: 'restart' };

test('600 tasks polled by two gateways, PostgreSQL stopped for 5 s and started: both keep answering, nothing lost', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'spendgate-restart-'));
  const settings = ['fsync=off'];
  let server: EmbeddedDatabase = await startEmbeddedPostgres({ dataDir: dir, settings });
  const port = Number(new URL(server.url).port);
  await migrate(server.url);
  const sim = createSimulator({ apiKey: VENDOR_KEY, delayMs: 30_000 });
  const simUrl = await sim.app.listen({ port: 0, host: '127.0.0.1' });
  const env = {
    DATABASE_URL: server.url,
    UPSTREAM_BASE_URL: simUrl,
    UPSTREAM_API_KEY: VENDOR_KEY,
    ADMIN_TOKEN: ADMIN,
    POLL_INTERVAL_MS: '100',
    POLL_MAX_PER_SECOND: '400',
    DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'spendgate-restart-gw-')),
  };
  const gateways: ChildGateway[] = [];
  const db = new Database(server.url, 2);
  try {
    gateways.push(await spawnGateway(env), await spawnGateway(env));
    const projects = new ProjectsService(db);
    const key = await projects.issueKey((await projects.create('restart')).id);
    for (let i = 0; i < 600; i += 30) {
      const answers = await Promise.all(
        Array.from({ length: 30 }, (_, j) =>
          http(`${gateways[(i + j) % 2]!.url}/api-platform/v1/generations`, { key, body: IMAGE }),
        ),
      );
      expect(answers.map((a) => a.status)).toEqual(Array(30).fill(200));
    }
    // The pollers are at work on all 600 (the vendor answers "processing" for 30 s).
    await eventually(
      async () =>
        (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM task WHERE poll_attempts > 0')).rows[0]!.n > 100,
      20_000,
      100,
    );
    await db.close();

    // An immediate shutdown, as a machine's crash or `pg_ctl -m immediate` leaves it.
    const pid = Number(readFileSync(path.join(dir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
    process.kill(pid, 'SIGQUIT');
    await eventually(async () => !alive(pid), 10_000, 50);
    const during: number[] = [];
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setTimeout(r, 1_000));
      for (const gw of gateways) {
        expect(gw.proc.exitCode).toBeNull();
        during.push((await http(`${gw.url}/api-platform/v1/generations`, { key, body: IMAGE })).status);
      }
    }
    // While the database is away: the documented 503, never a dead process.
    expect(new Set(during)).toEqual(new Set([503]));
    server = await startEmbeddedPostgres({ dataDir: dir, port, settings });

    for (const gw of gateways) {
      const ok = await eventually(
        async () =>
          (await http(`${gw.url}/api-platform/v1/generations`, { key, body: IMAGE })).status === 200 ? true : undefined,
        30_000,
        250,
      );
      expect(ok).toBe(true);
    }
    // Polling goes on after the restart: the pollers record polls again.
    const check = new pg.Client({ connectionString: server.url });
    await check.connect();
    const attempts = async () =>
      (await check.query<{ n: string }>('SELECT sum(poll_attempts)::text AS n FROM task')).rows[0]!.n;
    const before = BigInt(await attempts());
    await eventually(async () => BigInt(await attempts()) > before + 100n, 20_000, 200);
    await check.end();
    for (const gw of gateways) {
      expect(gw.proc.exitCode).toBeNull();
      expect(gw.output()).not.toMatch(/unhandled rejection/);
    }
    const after = new Database(server.url, 2);
    expect(await after.query('SELECT 1')).toBeTruthy();
    expect(await reconcile(after)).toEqual([]);
    await after.close();
  } finally {
    for (const gw of gateways) gw.proc.kill('SIGKILL');
    await Promise.all(gateways.map((g) => g.exited));
    await sim.app.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}, 180_000);

test('a connection that dies inside a transaction, between two statements, fails that transaction and nothing else (no unhandled error event)', async () => {
  const url = await freshDatabase();
  const db = new Database(url, 2);
  const killer = new pg.Client({ connectionString: url });
  await killer.connect();
  try {
    const failed = db.inTransaction(async () => {
      const { rows } = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      // The server ends this connection while the transaction waits for something else.
      await killer.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      await new Promise((r) => setTimeout(r, 200));
      await db.query('SELECT 1');
    });
    await expect(failed).rejects.toThrow();
    // The pool gives out a live connection afterwards; the dead one was not given back.
    expect((await db.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    expect((await db.inTransaction(() => db.query<{ two: number }>('SELECT 2 AS two'))).rows).toEqual([{ two: 2 }]);
  } finally {
    await killer.end();
    await db.close();
  }
});
