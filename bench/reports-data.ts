/**
 * The reports data set shared by bench:reports and bench:console: 1,000,000 settled tasks (BENCH_TASKS)
 * over 90 days and 50 projects, 100,000 end users (BENCH_USERS), tags, chat charge lines, and
 * the roll-ups built from them as the migrations build them.
 */
import { readFileSync } from 'node:fs';
import { MODEL_ROUTES } from '../src/catalog/catalog.js';
import type { Database } from '../src/database/database.js';
import { LedgerSealer } from '../src/ledger/ledger-sealer.js';

export const TASKS = Number(process.env.BENCH_TASKS ?? 1_000_000);
export const PROJECTS = 50;
export const DAYS = 90;
export const USERS = Number(process.env.BENCH_USERS ?? 100_000);

/**
 * Tasks straight into the tables (the gateway path is benchmarked elsewhere): chat tasks carry
 * input, output and cache-read charge lines, video tasks their seconds and image tasks their count
 * in the price basis, as settlement leaves them. The roll-up is then built from those rows.
 */
/** The models the data sets use, numbered, as JSON rows (i, id, family, kind, unit). */
export const BENCH_MODELS = JSON.stringify(
  MODEL_ROUTES.filter((r) => !['seedream-4.5', 'seedream-5.0'].includes(r.id)).map((m, i) => ({
    i,
    id: m.id,
    family: m.family,
    kind: m.kind,
    unit: m.kind === 'chat' ? 'CREDITS' : 'USD',
  })),
);

export async function seed(db: Database, tasks = TASKS) {
  const catalog = BENCH_MODELS;
  await db.query(
    `INSERT INTO project (id, name) SELECT gen_random_uuid(), 'project-' || lpad(g::text, 2, '0') FROM generate_series(1, ${PROJECTS}) g`,
  );
  await db.query(
    `CREATE TEMP TABLE m AS SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(i int, id text, family text, kind text, unit "Unit")`,
    [catalog],
  );
  await db.query(`CREATE TEMP TABLE p AS SELECT row_number() OVER (ORDER BY name) - 1 AS i, id FROM project`);
  // Each project uses 6 models; amounts are exact decimals with up to 7 places, like token charges.
  await db.query(`
    INSERT INTO task (project_id, model, family, kind, unit, status, price_basis, price_book_version, exactness,
                      estimate_amount, hold_amount, charge_amount, charge_exactness, accepted_at, settled_at, updated_at, end_user, tags)
    SELECT p.id, m.id, m.family, m.kind, m.unit, 'ready',
           CASE m.kind WHEN 'video' THEN jsonb_build_object('kind', 'video', 'duration', 4 + g % 9)
                       WHEN 'image' THEN jsonb_build_object('kind', 'image', 'n', 1 + g % 4)
                       ELSE jsonb_build_object('kind', 'chat') END,
           1, 'EXACT', a.amount, a.amount, a.amount, 'EXACT', a.at, a.at, a.at,
           CASE WHEN g % 10 = 5 THEN NULL ELSE 'user-' || lpad((g % ${USERS})::text, 6, '0') END, CASE WHEN g % 4 = 0 THEN '{}'::text[] ELSE ARRAY['feature=f' || (g % 7)] END
    FROM generate_series(1, ${tasks}) g
    CROSS JOIN LATERAL (SELECT g % ${PROJECTS} AS pi, (g % ${PROJECTS} * 3 + (g / ${PROJECTS}) % 6) % (SELECT count(*) FROM m) AS mi) k
    JOIN p ON p.i = k.pi JOIN m ON m.i = k.mi
    -- "g * 0" ties the random draws to each row (an uncorrelated LATERAL would be evaluated once).
    CROSS JOIN LATERAL (SELECT (floor(random() * 10000000 + g * 0) / 10000000 * 5)::numeric AS amount,
                               now() - (random() + g * 0) * interval '${DAYS} days' AS at) a`);
  // Each task's ledger entries as settlement leaves them (hold, release, charge, at its acceptance):
  // what a drill-down's taskTotals counts (money posted in a range, decisions §13).
  await db.query(`
    INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at)
    SELECT t.project_id, t.id, k.kind::"LedgerKind", t.unit, CASE k.kind WHEN 'charge' THEN t.charge_amount ELSE t.hold_amount END, t.accepted_at
    FROM task t, (VALUES ('hold'), ('release'), ('charge')) k(kind)`);
  await db.query(`
    INSERT INTO charge_line (task_id, stage, seq, component, quantity, rate, per, amount)
    SELECT t.id, 'charge', c.seq, c.component, q.quantity, c.rate, 1000000, q.quantity * c.rate / 1000000
    FROM task t
    CROSS JOIN (VALUES (1, 'input', 3.0), (2, 'output', 15.0), (3, 'cache_read', 0.3)) AS c(seq, component, rate)
    CROSS JOIN LATERAL (SELECT ((t.id * 7919 + c.seq * 104729) % 40000)::numeric AS quantity) q
    WHERE t.kind = 'chat'`);
  await buildRollups(db);
}

/**
 * The seeded ledger sealed, as the gateway that wrote it would have sealed it as it went (decisions
 * §13, every LEDGER_SEAL_MS). A bench that starts gateways on the data set calls it: else one of
 * them (whichever holds the sealer's lock) spends the run catching up on 3,000,000 entries, at most
 * two thirds of the time, in PostgreSQL (bench:console on 2026-12-01: 41 seals, 4.2 s of SQL in 9 s
 * of reloads), beside what the bench times; of two gateways alternated, only that one pays it.
 */
export async function sealSeeded(db: Database): Promise<number> {
  return new LedgerSealer(db).sealAll();
}

/** The roll-ups, built from the task rows as settlement and the migrations build them; then VACUUM ANALYZE. */
export async function buildRollups(db: Database) {
  await db.query(`
    INSERT INTO spend_rollup (day, project_id, model, unit, status, tasks, unpriced_tasks, amount, input_tokens, output_tokens,
                              cache_read_tokens, cache_write_5m_tokens, cache_write_1h_tokens, cache_write_tokens, video_seconds, images)
    SELECT day, project_id, model, unit, 'ready', tasks, unpriced, amount, input::bigint, output::bigint,
           cache_read::bigint, cw5m::bigint, cw1h::bigint, cw::bigint, seconds::numeric, images
    FROM (${RAW_GROUPED("(t.accepted_at AT TIME ZONE 'UTC')::date AS day, t.project_id, t.model", '1, 2, 3', 'TRUE')}) r`);
  // The roll-up by who, as the migration that introduced it builds it from settled tasks.
  const migration = readFileSync('prisma/migrations/20261123211800_attribution_ledger/migration.sql', 'utf8');
  await db.query(
    migration.slice(
      migration.indexOf(
        'INSERT INTO spend_rollup_by AS s',
        migration.indexOf('-- Spend by who for what was settled before'),
      ),
    ),
  );
  // ...and the one that moved its user rows to the monthly user tables.
  const move = readFileSync('prisma/migrations/20261123221600_user_rollup_ledger/migration.sql', 'utf8');
  await db.query(move.slice(move.indexOf('-- The user rows kept so far move')));
  await db.query('VACUUM ANALYZE');
}

/**
 * The report by GROUP BY over raw rows: tasks in the window, each with its charge lines summed per
 * token class, seconds and images from its price basis. `keys` are the grouping expressions.
 */
export const RAW_GROUPED = (keys: string, groupBy: string, where: string, join = '') => `
  WITH t AS (SELECT * FROM task t WHERE t.settled_at IS NOT NULL AND ${where}),
  l AS (SELECT task_id,
               sum(quantity) FILTER (WHERE component = 'input') AS input, sum(quantity) FILTER (WHERE component = 'output') AS output,
               sum(quantity) FILTER (WHERE component = 'cache_read') AS cache_read, sum(quantity) FILTER (WHERE component = 'cache_write_5m') AS cw5m,
               sum(quantity) FILTER (WHERE component = 'cache_write_1h') AS cw1h, sum(quantity) FILTER (WHERE component = 'cache_write') AS cw
        FROM charge_line WHERE stage = 'charge' AND task_id IN (SELECT id FROM t) GROUP BY task_id)
  SELECT ${keys}, t.unit, sum(t.charge_amount) AS amount, count(*)::int AS tasks,
         (count(*) FILTER (WHERE t.charge_exactness = 'UNPRICED'))::int AS unpriced,
         coalesce(sum(l.input), 0) AS input, coalesce(sum(l.output), 0) AS output, coalesce(sum(l.cache_read), 0) AS cache_read,
         coalesce(sum(l.cw5m), 0) AS cw5m, coalesce(sum(l.cw1h), 0) AS cw1h, coalesce(sum(l.cw), 0) AS cw,
         coalesce(sum((t.price_basis->>'duration')::numeric) FILTER (WHERE t.kind = 'video'), 0) AS seconds,
         coalesce(sum(coalesce((t.price_basis->>'n')::int, 1)) FILTER (WHERE t.kind = 'image'), 0)::int AS images
  FROM t ${join} LEFT JOIN l ON l.task_id = t.id
  GROUP BY ${groupBy}, t.unit`;
