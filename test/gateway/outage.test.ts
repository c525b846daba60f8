/**
 * The database stops while the vendor is accepting tasks (decisions §5). Once the vendor has
 * accepted, the client is never told "nothing was charged… retry": the gateway keeps recording
 * the task until the database is back and answers with the vendor's body, or, past its retry
 * window, answers a 503 that names the task and says not to resubmit, and records it later. A
 * retry with the same Idempotency-Key never makes a second vendor task.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Gateway } from '../../src/bootstrap.js';
import { freePort, startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/database/embedded.js';
import { migrate } from '../../src/database/migrate.js';
import { reconcile } from '../../src/ledger/reconcile.js';
import {
  eventually,
  gateway,
  http,
  projectWithKey,
  sql,
  submitGeneration,
  type GatewayAnswer,
  type HttpResult,
} from '../support/harness.js';

const IMAGE = { model: 'seedream-4.0', prompt: 'outage' };

async function withOutage(
  windowMs: string,
  check: (ctx: {
    gw: Gateway;
    key: string;
    results: HttpResult<GatewayAnswer>[];
    restart: () => Promise<void>;
  }) => Promise<void>,
) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'spendgate-outage-'));
  const port = await freePort();
  let server: EmbeddedDatabase = await startEmbeddedPostgres({ dataDir: dir, port, settings: ['fsync=off'] });
  let restarted: Promise<void> | undefined;
  await migrate(server.url);
  const gw = await gateway(server.url, {
    RECORD_RETRY_WINDOW_MS: windowMs,
    SIMULATOR_DELAY_MS: '600000',
    POLLER_ENABLED: 'false',
    UPSTREAM_TIMEOUT_MS: '10000',
  });
  try {
    const { key } = await projectWithKey(gw);
    // The vendor takes 2 s to answer: once all six holds are placed and every request is at the
    // vendor, the database goes away while the vendor is accepting, and comes back 2.5 s later.
    // (Waiting on the vendor's own count, not a sleep: on a slow machine a sleep stopped the
    // database before the sixth hold was placed.)
    await http(`${gw.simulatorUrl}/__sim/config`, { body: { latencyMs: 2_000 } });
    const sim = gw.simulator!;
    const before = sim.received.submissions;
    const submissions = Promise.all(
      Array.from({ length: 6 }, (_, i) => submitGeneration(gw, key, IMAGE, { 'idempotency-key': `outage-${i}` })),
    );
    await eventually(async () => sim.received.submissions - before === 6, 10_000, 10);
    await server.stop();
    restarted = new Promise<void>((resolve, reject) =>
      setTimeout(() => {
        startEmbeddedPostgres({ dataDir: dir, port, settings: ['fsync=off'] }).then((s) => {
          server = s;
          resolve();
        }, reject);
      }, 2_500),
    );
    const results = await submissions;
    await http(`${gw.simulatorUrl}/__sim/config`, { body: { latencyMs: 0 } });
    const back = restarted;
    await check({ gw, key, results, restart: () => back });
  } finally {
    // Never leave the restart pending past the test: it would start a PostgreSQL after the suite.
    await restarted?.catch(() => undefined);
    await gw.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

test('within the retry window: every accepted task is recorded once the database is back, and its client gets the vendor body', async () => {
  await withOutage('10000', async ({ gw, results, restart }) => {
    await restart();
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    for (const r of results) expect(r.body).toMatchObject({ code: 1000, data: { taskId: expect.any(Number) } });
    const rows = await sql(gw, `SELECT status, upstream_task_id::text AS id FROM task ORDER BY id`);
    expect(rows.map((r) => r.status)).toEqual(Array(6).fill('processing'));
    expect(new Set(rows.map((r) => r.id))).toEqual(new Set(results.map((r) => String(r.body.data.taskId))));
    expect(await reconcile(gw.db)).toEqual([]);
  });
}, 60_000);

test('past the retry window: a 503 that names the task and says not to resubmit; the task is recorded later; a keyed retry replays it', async () => {
  await withOutage('300', async ({ gw, key, results, restart }) => {
    const vendorTasks = gw.simulator!.tasks.size;
    expect(vendorTasks).toBe(6);
    for (const r of results) {
      expect(r.status).toBe(503);
      expect(r.body).toMatchObject({
        code: 5031,
        details: { upstreamTaskId: expect.stringMatching(/^\d+$/), outcome: 'accepted, not yet recorded' },
      });
      expect(r.body.message).toMatch(/^the vendor accepted this task as taskId \d+, but the database is unavailable/);
      expect(r.body.message).toMatch(/Do not submit it again/);
      expect(r.text).not.toMatch(/nothing was charged/);
    }
    await restart();
    // The gateway goes on recording them in the background.
    await eventually(
      async () =>
        (
          await sql(
            gw,
            `SELECT count(*)::int AS n FROM task WHERE status = 'processing' AND upstream_task_id IS NOT NULL`,
          )
        )[0].n === 6,
      15_000,
      100,
    );
    const recorded = (await sql(gw, 'SELECT upstream_task_id::text AS id FROM task')).map((r) => r.id).sort();
    expect(recorded).toEqual(results.map((r) => r.body.details.upstreamTaskId).sort());
    // A client that retries with its key gets the vendor's answer; the vendor sees no second task.
    const retry = await submitGeneration(gw, key, IMAGE, { 'idempotency-key': 'outage-0' });
    expect(retry.status).toBe(200);
    expect(String(retry.body.data.taskId)).toBe(results[0]!.body.details.upstreamTaskId);
    expect(gw.simulator!.tasks.size).toBe(vendorTasks);
    expect(await reconcile(gw.db)).toEqual([]);
  });
}, 60_000);
