/**
 * Monthly partitions at their edges (decisions §18), on real PostgreSQL: a task accepted in the
 * last millisecond of a month and settled in the next; a month whose partitions did not exist yet
 * (its rows wait in the default partitions, then move); an Idempotency-Key reused across a month's
 * boundary; the vendor's task id unique across months; a task found by either id in any month.
 */
import type { Gateway } from '../../src/bootstrap.js';
import { LedgerService } from '../../src/ledger/ledger.service.js';
import { reconcile } from '../../src/ledger/reconcile.js';
import { Decimal } from '../../src/pricing/money.js';
import { TaskStore } from '../../src/tasks/task-store.js';
import { acceptedTask, chatBody, heldTask, holdFor, taskIdOf } from '../support/builders.js';
import { ADMIN, freshDatabase, gateway, graphql, projectWithKey, sql } from '../support/harness.js';

const LAST_MS_OF_OCTOBER = new Date('2026-10-31T23:59:59.999Z');
const FIRST_MS_OF_NOVEMBER = new Date('2026-11-01T00:00:00.001Z');

/** The partition a row is in, by table and key. */
async function partitionOf(gw: Gateway, table: string, where: string, params: unknown[]): Promise<string[]> {
  const rows = await sql<{ p: string }>(
    gw,
    `SELECT tableoid::regclass::text AS p FROM ${table} WHERE ${where} ORDER BY 1`,
    params,
  );
  return rows.map((r) => r.p);
}

/** October's chat charge: 12 input and 30 output tokens of glm-5.3 (1400 and 4900 credits per 1M). */
const CHAT_CHARGE = {
  unit: 'CREDITS' as const,
  exactness: 'EXACT' as const,
  amount: new Decimal('0.1638'),
  lines: [
    {
      component: 'input',
      quantity: new Decimal(12),
      rate: new Decimal(1400),
      per: new Decimal(1_000_000),
      amount: new Decimal('0.0168'),
    },
    {
      component: 'output',
      quantity: new Decimal(30),
      rate: new Decimal(4900),
      per: new Decimal(1_000_000),
      amount: new Decimal('0.147'),
    },
  ],
  warnings: [],
  needsReview: false,
};

describe('monthly partitions', () => {
  let gw: Gateway;
  let projectId: string;

  beforeAll(async () => {
    gw = await gateway(await freshDatabase(), { POLLER_ENABLED: 'false', LEDGER_SEAL_MS: '0' });
    ({ projectId } = await projectWithKey(gw, 'history'));
  }, 60_000);
  afterAll(async () => gw?.close());

  test('the month now and PARTITIONS_AHEAD more exist after migrate, each table with its default', async () => {
    const made = await sql<{ name: string }>(
      gw,
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
       WHERE i.inhparent = 'task'::regclass ORDER BY 1`,
    );
    // This month and the next two (PARTITIONS_AHEAD), by the clock the migration ran at.
    const month = (ahead: number) => {
      const now = new Date();
      const at = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + ahead, 1));
      return `task_y${at.getUTCFullYear()}m${String(at.getUTCMonth() + 1).padStart(2, '0')}`;
    };
    expect(made.map((r) => r.name)).toEqual(['task_default', month(0), month(1), month(2)]);
    // Asked again (another instance, the hourly round): nothing to make.
    expect(await sql(gw, 'SELECT spendgate_make_partitions(2)')).toEqual([]);
  });

  test('accepted at 23:59:59.999 on the last day of a month without partitions, settled the next month', async () => {
    const held = await heldTask(gw, { projectId, body: chatBody(), acceptedAt: LAST_MS_OF_OCTOBER });
    // Its id carries October (months since 1970 in the bits above 40).
    expect(BigInt(held.taskId) >> 40n).toBe(BigInt((2026 - 1970) * 12 + 9));
    // October had no partition: the hold was not refused, its rows wait in the defaults.
    expect(await partitionOf(gw, 'task', 'id = $1', [held.taskId])).toEqual(['task_default']);
    expect(await partitionOf(gw, 'ledger_entry', 'task_id = $1', [held.taskId])).toEqual(['ledger_entry_default']);

    // October's partitions are made: the rows move into them, and nothing else changes.
    for (const table of ['task', 'charge_line', 'ledger_entry', 'spend_hourly'])
      expect(await sql(gw, `SELECT spendgate_month_partition($1, '2026-10-01') AS made`, [table])).toEqual([
        { made: `${table}_y2026m10` },
      ]);
    expect(await partitionOf(gw, 'task', 'id = $1', [held.taskId])).toEqual(['task_y2026m10']);
    expect(await partitionOf(gw, 'ledger_entry', 'task_id = $1', [held.taskId])).toEqual(['ledger_entry_y2026m10']);
    expect(await sql(gw, 'SELECT count(*)::int AS n FROM task_default')).toEqual([{ n: 0 }]);

    // Settled now (November): October is open, so its release and charge are posted at its acceptance
    // (decisions §13), in October's partition; the charge lines live beside the task.
    const settled = await gw.app
      .get(LedgerService)
      .settle({ taskId: held.taskId, status: 'ready', charge: CHAT_CHARGE, usage: {}, rollup: {} });
    expect(settled.settled).toBe(true);
    const entries = await sql<{ kind: string; p: string; amount: string }>(
      gw,
      `SELECT kind::text, tableoid::regclass::text AS p, amount::text FROM ledger_entry WHERE task_id = $1 ORDER BY id`,
      [held.taskId],
    );
    expect(entries.map((e) => [e.kind, e.p])).toEqual([
      ['hold', 'ledger_entry_y2026m10'],
      ['release', 'ledger_entry_y2026m10'],
      ['charge', 'ledger_entry_y2026m10'],
    ]);
    expect(entries[2]!.amount).toBe('0.1638');
    expect(await partitionOf(gw, 'charge_line', 'task_id = $1', [held.taskId])).toEqual([
      'charge_line_y2026m10',
      'charge_line_y2026m10',
    ]);
    // Exactly once still holds inside the partition: a second settlement is refused.
    const again = await gw.app
      .get(LedgerService)
      .settle({ taskId: held.taskId, status: 'ready', charge: CHAT_CHARGE, usage: {}, rollup: {} });
    expect(again.settled).toBe(false);
    expect(await reconcile(gw.db)).toEqual([]);
  });

  test('an Idempotency-Key reused across the boundary answers the first task; freed, it is used again', async () => {
    const first = await holdFor(gw, { projectId, idempotencyKey: 'order-77', acceptedAt: LAST_MS_OF_OCTOBER });
    expect(first.outcome).toBe('held');
    const retry = await holdFor(gw, { projectId, idempotencyKey: 'order-77', acceptedAt: FIRST_MS_OF_NOVEMBER });
    expect(retry).toMatchObject({ outcome: 'in_progress', taskId: taskIdOf(first) });
    const other = await holdFor(gw, {
      projectId,
      idempotencyKey: 'order-77',
      body: chatBody(),
      acceptedAt: FIRST_MS_OF_NOVEMBER,
    });
    expect(other).toMatchObject({ outcome: 'conflict', taskId: taskIdOf(first) });
    expect(await sql(gw, `SELECT count(*)::int AS n FROM task WHERE idempotency_key = 'order-77'`)).toEqual([{ n: 1 }]);

    // The vendor refused the first: its key is free, and a November retry makes a November task.
    expect(await gw.app.get(LedgerService).releaseRejected(taskIdOf(first), 'refused by the vendor')).toBe(true);
    const fresh = await holdFor(gw, { projectId, idempotencyKey: 'order-77', acceptedAt: FIRST_MS_OF_NOVEMBER });
    expect(fresh.outcome).toBe('held');
    // November's partition when it was made ahead (the test then ran in November), else the default's.
    const november = await sql(gw, `SELECT to_regclass('task_y2026m11') IS NOT NULL AS made`);
    expect(await partitionOf(gw, 'task', 'id = $1', [taskIdOf(fresh)])).toEqual([
      (november[0] as { made: boolean }).made ? 'task_y2026m11' : 'task_default',
    ]);
    expect(await sql(gw, `SELECT task_id::text FROM task_idempotency WHERE idempotency_key = 'order-77'`)).toEqual([
      { task_id: taskIdOf(fresh) },
    ]);
  });

  test("the vendor's task id is unique across months, and a task is found by it in any month", async () => {
    const october = await acceptedTask(gw, { projectId, upstreamTaskId: '880001', acceptedAt: LAST_MS_OF_OCTOBER });
    const november = await heldTask(gw, { projectId });
    await expect(
      gw.app.get(TaskStore).recordAccepted({
        taskId: november.taskId,
        upstreamId: 'vd_880001',
        upstreamTaskId: '880001',
        responseBody: '{}',
      }),
    ).rejects.toThrow(/task_upstream_pkey/);
    const found = await graphql(gw, ADMIN, '{ task(taskId: "880001") { taskId model acceptedAt } }');
    expect(found.body.data).toEqual({
      task: { taskId: '880001', model: 'seedream-4.0', acceptedAt: LAST_MS_OF_OCTOBER.toISOString() },
    });
    expect(await partitionOf(gw, 'task', 'upstream_task_id = 880001', [])).toEqual(['task_y2026m10']);
    expect(october.taskId).not.toBe(november.taskId);
  });
});
