/**
 * The migration to monthly partitions on a database with history (decisions §18): every row of
 * task, charge_line, ledger_entry and spend_hourly is kept byte for byte, each month of ids given
 * before becomes its own partition, the keys move to their tables, and the gateway goes on from
 * there (a key used before is still used; a vendor id still finds its task; new ids carry their
 * month). Its time on a 1M-task database is measured by bench:history (docs/operations.md).
 */
import pg from 'pg';
import { migrate } from '../../src/database/migrate.js';
import { holdFor, taskIdOf } from '../support/builders.js';
import { ADMIN, emptyDatabase, gateway, graphql, sql } from '../support/harness.js';

const BEFORE_PARTITIONS = '20261127160000_submission_ref';
const PROJECT = '00000000-0000-4000-8000-0000000000b7';
const TASKS = 3_000;

/** Each table's rows, in key order, as one digest: what a reader could see of it. */
const DIGESTS = `
  SELECT (SELECT md5(string_agg(t::text, '|' ORDER BY t.id)) FROM task t) AS task,
         -- the columns charge_line had then (later migrations append list_rate and list_amount, decisions §19)
         (SELECT md5(string_agg((c.task_id, c.stage, c.seq, c.component, c.quantity, c.rate, c.per, c.amount)::text, '|'
                                ORDER BY c.task_id, c.stage, c.seq)) FROM charge_line c) AS charge_line,
         (SELECT md5(string_agg(l::text, '|' ORDER BY l.id)) FROM ledger_entry l) AS ledger_entry,
         (SELECT md5(string_agg(h::text, '|' ORDER BY h.hour, h.dimension, h.value)) FROM spend_hourly h) AS spend_hourly,
         (SELECT count(*)::int FROM task) AS tasks`;

test('a database with four months of history is partitioned with every row kept', async () => {
  const url = await emptyDatabase();
  await migrate(url, () => {}, { upTo: BEFORE_PARTITIONS });
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  let before: Record<string, unknown>;
  try {
    await client.query(`INSERT INTO project (id, name) VALUES ($1, 'with-history')`, [PROJECT]);
    // August to November, in order of acceptance (ids rise with time), as the gateway wrote them;
    // one task accepted at September's last instant is written last, after November's (out of order).
    await client.query(
      `INSERT INTO task (project_id, model, family, kind, unit, status, price_basis, price_book_version, exactness,
                         estimate_amount, hold_amount, charge_amount, charge_exactness, accepted_at, settled_at, updated_at,
                         idempotency_key, request_hash, upstream_task_id, upstream_id)
       SELECT $1, 'glm-5.3', 'glm', 'chat', 'CREDITS', 'ready', '{"kind":"chat"}', 1, 'EXACT', 4.9084, 4.9084, 0.1638, 'EXACT',
              at, at, at, CASE WHEN g % 3 = 0 THEN 'key-' || g END, 'h' || g, 700000 + g, 'vd_' || g
       FROM generate_series(1, ${TASKS}) g,
            LATERAL (SELECT timestamptz '2026-08-01' + (g - 1) * (timestamptz '2026-11-20' - timestamptz '2026-08-01') / ${TASKS} AS at) a
       ORDER BY g`,
      [PROJECT],
    );
    await client.query(
      `INSERT INTO task (project_id, model, family, kind, unit, status, price_basis, price_book_version, exactness,
                         estimate_amount, hold_amount, accepted_at, updated_at)
       VALUES ($1, 'glm-5.3', 'glm', 'chat', 'CREDITS', 'processing', '{"kind":"chat"}', 1, 'EXACT', 1, 1,
               '2026-09-30T23:59:59.9998Z', now())`,
      [PROJECT],
    );
    await client.query(`
      INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at)
      SELECT t.project_id, t.id, k.kind::"LedgerKind", t.unit, CASE k.kind WHEN 'charge' THEN t.charge_amount ELSE t.hold_amount END, t.accepted_at
      FROM task t, (VALUES ('hold'), ('release'), ('charge')) k(kind) WHERE t.settled_at IS NOT NULL`);
    await client.query(`
      INSERT INTO charge_line (task_id, stage, seq, component, quantity, rate, per, amount)
      SELECT t.id, 'charge', c.seq, c.component, c.q, c.rate, 1000000, c.q * c.rate / 1000000
      FROM task t, (VALUES (1, 'input', 12, 1400), (2, 'output', 30, 4900)) c(seq, component, q, rate) WHERE t.settled_at IS NOT NULL`);
    await client.query(`
      INSERT INTO spend_hourly (hour, dimension, project_id, value, unit, amount, tasks)
      SELECT date_trunc('hour', accepted_at), 'project', project_id, '', unit, sum(charge_amount), count(*)
      FROM task WHERE settled_at IS NOT NULL GROUP BY 1, 3, 5`);
    before = (await client.query(DIGESTS)).rows[0];

    await migrate(url);

    expect((await client.query(DIGESTS)).rows[0]).toEqual(before);
    // Each month of old ids is a partition of its own; the task out of order stays with the ids around it.
    const where = await client.query<{ p: string; month: string; n: number }>(
      `SELECT tableoid::regclass::text AS p, to_char(accepted_at AT TIME ZONE 'UTC', 'YYYY-MM') AS month, count(*)::int AS n
       FROM task GROUP BY 1, 2 ORDER BY 1, 2`,
    );
    expect(where.rows).toEqual([
      { p: 'task_y2026m08_before', month: '2026-08', n: expect.any(Number) },
      { p: 'task_y2026m09_before', month: '2026-09', n: expect.any(Number) },
      { p: 'task_y2026m10_before', month: '2026-10', n: expect.any(Number) },
      { p: 'task_y2026m11_before', month: '2026-09', n: 1 },
      { p: 'task_y2026m11_before', month: '2026-11', n: expect.any(Number) },
    ]);
    const entries = await client.query(
      `SELECT tableoid::regclass::text AS p, count(*)::int AS n FROM ledger_entry GROUP BY 1 ORDER BY 1`,
    );
    expect(entries.rows.map((r) => r.p)).toEqual([
      'ledger_entry_y2026m08',
      'ledger_entry_y2026m09',
      'ledger_entry_y2026m10',
      'ledger_entry_y2026m11',
    ]);
    expect(
      (
        await client.query(
          `SELECT count(*)::int AS n FROM task_idempotency k JOIN task t ON t.id = k.task_id AND t.idempotency_key = k.idempotency_key`,
        )
      ).rows,
    ).toEqual([{ n: TASKS / 3 }]);
    expect((await client.query(`SELECT count(*)::int AS n FROM task_upstream`)).rows).toEqual([{ n: TASKS }]);
  } finally {
    await client.end();
  }

  // The gateway goes on from there.
  const gw = await gateway(url, { POLLER_ENABLED: 'false', LEDGER_SEAL_MS: '0' });
  try {
    const used = await holdFor(gw, { projectId: PROJECT, idempotencyKey: 'key-300' });
    expect(used.outcome).toBe('conflict'); // used before the migration, by another request
    const fresh = await holdFor(gw, { projectId: PROJECT, idempotencyKey: 'key-new' });
    expect(fresh.outcome).toBe('held');
    // A task of now: its id carries this month, and it lives in this month's partition (made ahead).
    const now = new Date();
    expect(BigInt(taskIdOf(fresh)) >> 40n).toBe(BigInt((now.getUTCFullYear() - 1970) * 12 + now.getUTCMonth()));
    expect(await sql(gw, 'SELECT tableoid::regclass::text AS p FROM task WHERE id = $1', [taskIdOf(fresh)])).toEqual([
      { p: `task_y${now.getUTCFullYear()}m${String(now.getUTCMonth() + 1).padStart(2, '0')}` },
    ]);
    const found = await graphql(gw, ADMIN, '{ task(taskId: "700042") { taskId acceptedAt } }');
    expect(found.body.data).toEqual({ task: { taskId: '700042', acceptedAt: expect.stringMatching(/^2026-08/) } });
  } finally {
    await gw.close();
  }
}, 120_000);
