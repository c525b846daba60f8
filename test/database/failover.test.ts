/**
 * A gateway rides a switchover (decisions §17): its database address (a TCP proxy here, as HAProxy
 * routes to the leader in deploy) moves from a primary to its streaming standby. While the address
 * leads to a server that is still a standby, every write is refused (SQLSTATE 25006): submissions
 * answer 503, /readyz says "read-only" and the refused connections are dropped, not kept. Once the
 * standby is promoted, submissions succeed again without a restart, a submission retried with its
 * Idempotency-Key lands once, every task answered 200 is on the new primary with its hold, no hard
 * budget is passed, and reconcile is clean.
 */
import type { Gateway } from '../../src/bootstrap.js';
import { Database } from '../../src/database/database.js';
import { reconcile } from '../../src/ledger/reconcile.js';
import { imageBody } from '../support/builders.js';
import { eventually, gateway, hardBudget, http, projectWithKey, submitGeneration } from '../support/harness.js';
import { primaryWithStandby, query, type Pair } from '../support/standby.js';
import { TcpProxy } from '../support/tcp-proxy.js';

let pair: Pair;
let proxy: TcpProxy;
let gw: Gateway;

beforeAll(async () => {
  pair = await primaryWithStandby();
  proxy = new TcpProxy(pair.primaryPort);
  const url = new URL(pair.primary.url);
  url.port = String(await proxy.listen());
  gw = await gateway(url.toString(), { SIMULATOR_DELAY_MS: '600000', POLLER_ENABLED: 'false' });
}, 120_000);

afterAll(async () => {
  await gw?.close();
  await proxy?.close();
  await pair?.cleanup();
});

test('a switchover to the standby: 503 and "read-only" while it is one, then submissions land on the promoted primary, a retry once', async () => {
  const { projectId, key } = await projectWithKey(gw);
  // A hard budget with room for 10 images of 0.04.
  await hardBudget(gw.url, projectId, '0.40');
  const answered: string[] = [];
  for (let i = 0; i < 4; i++) {
    const res = await submitGeneration(gw, key, imageBody());
    expect(res.status).toBe(200);
    answered.push(String(res.body.data.taskId));
  }

  // The planned switchover: the primary stops (a fast shutdown sends the standby every WAL record),
  // and the address leads to the standby before it is promoted.
  await pair.primary.stop();
  proxy.switchTo(pair.standbyPort);
  const refused = await submitGeneration(gw, key, imageBody(), { 'Idempotency-Key': 'failover-retry-1' });
  expect(refused.status).toBe(503);
  const notReady = await http(`${gw.url}/readyz`);
  expect(notReady.status).toBe(503);
  expect((notReady.body as unknown as { database: string }).database).toMatch(/^read-only: a standby/);

  await query(pair.standbyUrl, 'SELECT pg_promote()');
  const promotedAt = performance.now();
  // The first submission that succeeds after the promotion, without restarting the gateway.
  const first = await eventually(
    async () => {
      const res = await submitGeneration(gw, key, imageBody());
      return res.status === 200 ? res : false;
    },
    30_000,
    100,
  );
  if (!first) throw new Error('no submission succeeded within 30 s of the promotion');
  console.log(`first submission after the promotion succeeded ${Math.round(performance.now() - promotedAt)} ms later`);
  answered.push(String(first.body.data.taskId));
  expect((await http(`${gw.url}/readyz`)).status).toBe(200);

  // The retried request lands once; the budget refuses past its limit on the new primary.
  const retried = await submitGeneration(gw, key, imageBody(), { 'Idempotency-Key': 'failover-retry-1' });
  expect(retried.status).toBe(200);
  const again = await submitGeneration(gw, key, imageBody(), { 'Idempotency-Key': 'failover-retry-1' });
  expect(again.status).toBe(200);
  expect(again.body.data.taskId).toBe(retried.body.data.taskId);
  answered.push(String(retried.body.data.taskId));
  let refusedByBudget = 0;
  for (let i = 0; i < 8; i++) {
    const res = await submitGeneration(gw, key, imageBody());
    if (res.status === 200) answered.push(String(res.body.data.taskId));
    else if (res.status === 402) refusedByBudget++;
    else throw new Error(`unexpected ${res.status}: ${JSON.stringify(res.body)}`);
  }
  expect(refusedByBudget).toBeGreaterThan(0);
  expect(answered.length).toBe(10); // exactly the budget's room: 10 × 0.04 = 0.40

  // On the new primary: every answered task with its hold, one task for the retried key, the
  // budget not passed, and the books consistent.
  const db = new Database(pair.standbyUrl, 1);
  try {
    const { rows } = await db.query<{ upstream: string; holds: number }>(
      `SELECT t.upstream_task_id::text AS upstream, count(e.id)::int AS holds FROM task t
       LEFT JOIN ledger_entry e ON e.task_id = t.id AND e.kind = 'hold' WHERE t.project_id = $1 GROUP BY t.id`,
      [projectId],
    );
    expect(rows.map((r) => r.upstream).sort()).toEqual([...answered].sort());
    expect(rows.every((r) => r.holds === 1)).toBe(true);
    const { rows: keyed } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM task WHERE project_id = $1 AND idempotency_key = 'failover-retry-1'`,
      [projectId],
    );
    expect(keyed[0]!.n).toBe(1);
    const { rows: balance } = await db.query<{ full: boolean }>(
      `SELECT p.spent + p.held = 0.40 AS full FROM budget_period p JOIN budget b ON b.id = p.budget_id WHERE b.project_id = $1`,
      [projectId],
    );
    expect(balance).toEqual([{ full: true }]);
    expect(await reconcile(db)).toEqual([]);
  } finally {
    await db.close();
  }
}, 120_000);
