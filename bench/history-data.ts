/**
 * bench:history's database: BENCH_TASKS settled tasks (default 10,000,000) over the 12 months before
 * the current one, made in SQL month by month into their partitions (ids carry their month), with
 * their ledger entries (hold, release, charge), chat charge lines, the vendor's ids, and the
 * roll-ups built as the migrations build them. Each month looks like bench:reports' data set: 50
 * projects, 6 models each, 100,000 end users, tags.
 */
import type { Database } from '../src/database/database.js';
import { BENCH_MODELS, buildRollups, PROJECTS, USERS } from './reports-data.js';

export const HISTORY_TASKS = Number(process.env.BENCH_TASKS ?? 10_000_000);
/** BENCH_MONTHS (default 12): fewer months of the same size, to time one part (BENCH_PARTS) on less data. */
export const MONTHS = Number(process.env.BENCH_MONTHS ?? 12);

/** The first day (UTC) of the months seeded, oldest first: the MONTHS before the current month. */
export function seededMonths(now = new Date()): Date[] {
  return Array.from(
    { length: MONTHS },
    (_, i) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - MONTHS + i, 1)),
  );
}

export async function seedHistory(db: Database, log: (line: string) => void): Promise<void> {
  await db.query(
    `INSERT INTO project (id, name) SELECT gen_random_uuid(), 'project-' || lpad(g::text, 2, '0') FROM generate_series(1, ${PROJECTS}) g`,
  );
  await db.query(
    `CREATE TABLE bench_model AS SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(i int, id text, family text, kind text, unit "Unit")`,
    [BENCH_MODELS],
  );
  await db.query(`CREATE TABLE bench_project AS SELECT row_number() OVER (ORDER BY name) - 1 AS i, id FROM project`);
  const perMonth = Math.floor(HISTORY_TASKS / MONTHS);
  for (const [n, month] of seededMonths().entries()) {
    const started = performance.now();
    const from = month.toISOString();
    const to = new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth() + 1, 1)).toISOString();
    for (const table of ['task', 'charge_line', 'ledger_entry', 'spend_hourly'])
      await db.query('SELECT spendgate_month_partition($1, $2::date)', [table, from.slice(0, 10)]);
    // In order of acceptance, as a gateway writes them.
    await db.query(
      `INSERT INTO task (id, project_id, model, family, kind, unit, status, price_basis, price_book_version, exactness,
                         estimate_amount, hold_amount, charge_amount, charge_exactness, accepted_at, settled_at, updated_at,
                         end_user, tags, upstream_task_id, upstream_id, response_body)
       SELECT spendgate_new_task_id(a.at), p.id, m.id, m.family, m.kind, m.unit, 'ready',
              CASE m.kind WHEN 'video' THEN jsonb_build_object('kind', 'video', 'duration', 4 + g % 9)
                          WHEN 'image' THEN jsonb_build_object('kind', 'image', 'n', 1 + g % 4)
                          ELSE jsonb_build_object('kind', 'chat') END,
              1, 'EXACT', a.amount, a.amount, a.amount, 'EXACT', a.at, a.at, a.at,
              CASE WHEN g % 10 = 5 THEN NULL ELSE 'user-' || lpad((g % ${USERS})::text, 6, '0') END,
              CASE WHEN g % 4 = 0 THEN '{}'::text[] ELSE ARRAY['feature=f' || (g % 7)] END,
              $3::bigint + g, 'vd_' || ($3::bigint + g), '{"code":1000,"data":{"status":"processing"}}'
       FROM generate_series(1, $4::int) g
       CROSS JOIN LATERAL (SELECT g % ${PROJECTS} AS pi, (g % ${PROJECTS} * 3 + (g / ${PROJECTS}) % 6) % (SELECT count(*) FROM bench_model) AS mi) k
       JOIN bench_project p ON p.i = k.pi JOIN bench_model m ON m.i = k.mi
       CROSS JOIN LATERAL (SELECT (floor(random() * 10000000 + g * 0) / 10000000 * 5)::numeric AS amount,
                                  $1::timestamptz + (g - 1) * ($2::timestamptz - $1::timestamptz) / $4::int AS at) a
       ORDER BY g`,
      [from, to, n * perMonth, perMonth],
    );
    const part = `task_y${from.slice(0, 4)}m${from.slice(5, 7)}`;
    await db.query(
      `INSERT INTO task_upstream (upstream_task_id, task_id, project_id) SELECT upstream_task_id, id, project_id FROM ${part}`,
    );
    await db.query(`
      INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at)
      SELECT t.project_id, t.id, k.kind::"LedgerKind", t.unit, CASE k.kind WHEN 'charge' THEN t.charge_amount ELSE t.hold_amount END, t.accepted_at
      FROM ${part} t, (VALUES (1, 'hold'), (2, 'release'), (3, 'charge')) k(o, kind) ORDER BY t.id, k.o`);
    await db.query(`
      INSERT INTO charge_line (task_id, stage, seq, component, quantity, rate, per, amount)
      SELECT t.id, 'charge', c.seq, c.component, q.quantity, c.rate, 1000000, q.quantity * c.rate / 1000000
      FROM ${part} t
      CROSS JOIN (VALUES (1, 'input', 3.0), (2, 'output', 15.0), (3, 'cache_read', 0.3)) AS c(seq, component, rate)
      CROSS JOIN LATERAL (SELECT ((t.id * 7919 + c.seq * 104729) % 40000)::numeric AS quantity) q
      WHERE t.kind = 'chat'`);
    log(`seeded ${from.slice(0, 7)}: ${perMonth} tasks in ${Math.round(performance.now() - started)} ms`);
  }
  const started = performance.now();
  await buildRollups(db);
  await db.query('DROP TABLE bench_model, bench_project');
  log(`roll-ups built and analysed in ${Math.round(performance.now() - started)} ms`);
}

/** Table and index bytes of what grows with tasks, per task. */
export async function bytesPerTask(db: Database): Promise<Record<string, number>> {
  const { rows } = await db.query<{ parent: string; bytes: string }>(
    `SELECT coalesce(p.relname, c.relname) AS parent, sum(pg_total_relation_size(c.oid))::text AS bytes
     FROM pg_class c LEFT JOIN pg_inherits i ON i.inhrelid = c.oid LEFT JOIN pg_class p ON p.oid = i.inhparent
     WHERE c.relkind = 'r' AND coalesce(p.relname, c.relname) IN ('task', 'charge_line', 'ledger_entry', 'task_upstream', 'task_idempotency')
     GROUP BY 1`,
  );
  const { rows: count } = await db.query<{ n: string }>('SELECT count(*)::text AS n FROM task');
  const tasks = Math.max(1, Number(count[0]!.n));
  const out: Record<string, number> = {};
  let total = 0;
  for (const r of rows) {
    out[r.parent] = Math.round(Number(r.bytes) / tasks);
    total += Number(r.bytes);
  }
  return { ...out, total: Math.round(total / tasks), tasks };
}
