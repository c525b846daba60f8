/**
 * The database fails while a hold is being written (decisions §17): the gateway cannot know
 * whether the hold committed, only that it never sent the request to the vendor. It answers 503
 * naming the submission (submissionRef), and whatever hold carries that reference is released
 * once the database answers: the task is rejected, nothing is charged, the Idempotency-Key is free
 * for the retry, which lands once. A hold still running when its connection broke is aborted by
 * its backend's client check rather than committing unseen later.
 */
import pg from 'pg';
import type { Gateway } from '../../src/bootstrap.js';
import { reconcile } from '../../src/ledger/reconcile.js';
import { imageBody } from '../support/builders.js';
import {
  eventually,
  freshDatabase,
  gateway,
  hardBudget,
  projectWithKey,
  submitGeneration,
} from '../support/harness.js';
import { query } from '../support/standby.js';
import { TcpProxy } from '../support/tcp-proxy.js';

let directUrl: string;
let proxy: TcpProxy;
let gw: Gateway;

beforeAll(async () => {
  directUrl = await freshDatabase();
  proxy = new TcpProxy(Number(new URL(directUrl).port));
  const url = new URL(directUrl);
  url.port = String(await proxy.listen());
  gw = await gateway(url.toString(), { POLLER_ENABLED: 'false', SIMULATOR_DELAY_MS: '600000' });
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await proxy?.close();
});

/** A project with a hard budget of 0.40 (ten images) and one task already held (caches warm). */
async function warmProject(): Promise<{ projectId: string; key: string }> {
  const { projectId, key } = await projectWithKey(gw);
  await hardBudget(gw.url, projectId, '0.40');
  expect((await submitGeneration(gw, key, imageBody())).status).toBe(200);
  return { projectId, key };
}

const heldAndSpent = async (projectId: string) =>
  (
    await query(
      directUrl,
      `SELECT (p.held + p.spent)::text AS used FROM budget_period p JOIN budget b ON b.id = p.budget_id WHERE b.project_id = $1`,
      [projectId],
    )
  )[0]!.used as string;

test('a hold committed while its answer was lost is released and named; the retry lands once', async () => {
  const { projectId, key } = await warmProject();
  // The server commits the hold; its answer never reaches the gateway; then the connection breaks.
  proxy.swallowReplies = true;
  const pending = submitGeneration(gw, key, imageBody(), { 'Idempotency-Key': 'lost-answer-1' });
  await eventually(
    async () =>
      (
        await query(
          directUrl,
          `SELECT 1 FROM task WHERE project_id = $1 AND idempotency_key = 'lost-answer-1' AND status = 'submitting'`,
          [projectId],
        )
      ).length === 1,
  );
  proxy.swallowReplies = false;
  proxy.switchTo();
  const refused = await pending;
  expect(refused.status).toBe(503);
  expect(refused.body.message).toMatch(/not sent to the vendor and nothing is charged/);
  const ref = refused.body.details.submissionRef as string;
  expect(ref).toMatch(/^[0-9a-f-]{36}$/);

  // Once the database answers, the hold that carries the reference is released, the task rejected.
  const released = await eventually(async () => {
    const rows = await query(
      directUrl,
      `SELECT t.status::text, t.idempotency_key, array_agg(e.kind::text ORDER BY e.id) AS kinds
       FROM task t JOIN ledger_entry e ON e.task_id = t.id WHERE t.submission_ref = $1 GROUP BY t.id`,
      [ref],
    );
    return rows[0]?.status === 'rejected' ? rows[0] : false;
  });
  expect(released).toEqual({ status: 'rejected', idempotency_key: null, kinds: ['hold', 'release'] });
  expect(await heldAndSpent(projectId)).toBe('0.04'); // the warm-up's hold alone

  // The retry with the same key lands once.
  const retried = await submitGeneration(gw, key, imageBody(), { 'Idempotency-Key': 'lost-answer-1' });
  expect(retried.status).toBe(200);
  const again = await submitGeneration(gw, key, imageBody(), { 'Idempotency-Key': 'lost-answer-1' });
  expect(again.body.data.taskId).toBe(retried.body.data.taskId);
  const keyed = await query(directUrl, `SELECT count(*)::int AS n FROM task WHERE idempotency_key = 'lost-answer-1'`);
  expect(keyed[0]!.n).toBe(1);
  expect(await heldAndSpent(projectId)).toBe('0.08');
  expect(await reconcile(gw.db)).toEqual([]);
}, 60_000);

test('a hold still waiting when its connection breaks is aborted by the server, never committed unseen', async () => {
  const { projectId, key } = await warmProject();
  // Every hold waits for the price book's lock, held here.
  const blocker = new pg.Client({ connectionString: directUrl });
  await blocker.connect();
  try {
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE price_book_version IN EXCLUSIVE MODE');
    const pending = submitGeneration(gw, key, imageBody());
    const waiting = `SELECT pid FROM pg_stat_activity WHERE application_name = 'spendgate' AND wait_event_type = 'Lock'`;
    await eventually(async () => (await query(directUrl, waiting)).length > 0);
    proxy.switchTo();
    const refused = await pending;
    expect(refused.status).toBe(503);
    // The backend notices its client is gone (client_connection_check_interval) and gives up.
    await eventually(async () => (await query(directUrl, waiting)).length === 0, 10_000, 100);
    await blocker.query('COMMIT');
  } finally {
    await blocker.end();
  }
  await new Promise((r) => setTimeout(r, 500));
  const tasks = await query(directUrl, `SELECT status::text FROM task WHERE project_id = $1 ORDER BY id`, [projectId]);
  expect(tasks.map((t) => t.status)).toEqual(['processing']); // the warm-up alone, accepted by the vendor
  expect(await heldAndSpent(projectId)).toBe('0.04');
  expect((await submitGeneration(gw, key, imageBody())).status).toBe(200);
}, 60_000);
