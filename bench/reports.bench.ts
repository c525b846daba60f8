/**
 * `npm run bench:reports`: seeds 1,000,000 settled tasks over 90 days and 50 projects (with the
 * daily roll-up built from them), then times a month's spend report grouped by project × model ×
 * day three ways in one run: the roll-up query (what spendReport runs), the same report through
 * GraphQL over HTTP, and the same report by GROUP BY over the raw task rows. Checks that the
 * roll-up and the raw report agree to the last decimal. Prints figures, writes
 * bench/results/reports.json; asserts nothing.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startGateway } from '../src/bootstrap.js';
import { MODEL_ROUTES } from '../src/catalog/catalog.js';
import { Database } from '../src/database/database.js';
import { startEmbeddedPostgres } from '../src/database/embedded.js';
import { migrate } from '../src/database/migrate.js';
import { spendReport } from '../src/reports/spend-report.js';

const TASKS = Number(process.env.BENCH_TASKS ?? 1_000_000);
const PROJECTS = 50;
const DAYS = 90;
const ADMIN = 'bench-admin-token-0123456789';

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'spendgate-reports-'));
  mkdirSync(dir, { recursive: true, mode: 0o711 });
  const server = await startEmbeddedPostgres({ dataDir: dir });
  try {
    await migrate(server.url);
    const db = new Database(server.url, 4);
    const seedStarted = Date.now();
    await seed(db);
    const seedSeconds = (Date.now() - seedStarted) / 1000;

    const today = new Date(new Date().toISOString().slice(0, 10) + 'T00:00:00Z');
    const from = new Date(today.getTime() - 30 * 86_400_000);
    const query = { from, to: today, groupBy: ['project', 'model', 'day'] as Array<'project' | 'model' | 'day'> };

    // A second, coarser report over the same month: the roll-up's advantage grows as the output shrinks.
    const coarse = { ...query, groupBy: ['project', 'model'] as Array<'project' | 'model'> };
    const coarseRollup = await time(30, () => spendReport(db, coarse));
    const coarseRaw = await time(5, () => rawCoarse(db, from, today));
    const coarseGroups = (await spendReport(db, coarse)).length;

    const rollupRows = await spendReport(db, query);
    const rollup = await time(30, () => spendReport(db, query));
    const raw = await time(5, () => rawReport(db, from, today));
    const rawRows = await rawReport(db, from, today);
    const agree = JSON.stringify(rollupRows.map((r) => [...r.keys, r.unit, r.amount, r.tasks])) === JSON.stringify(rawRows.map((r) => [r.k0, r.k1, r.k2, r.unit, r.amount, r.tasks]));

    const gw = await startGateway({ DATABASE_URL: server.url, PORT: '0', LOG_LEVEL: 'silent', ADMIN_TOKEN: ADMIN, POLLER_ENABLED: 'false', NODE_ENV: 'production' });
    const gqlBody = JSON.stringify({
      query: `query($f: DateTime!, $t: DateTime!) { spendReport(from: $f, to: $t, groupBy: ["project", "model", "day"]) { keys totals { unit amount } tasks } }`,
      variables: { f: from.toISOString(), t: today.toISOString() },
    });
    const graphql = await time(20, async () => {
      const res = await fetch(`${gw.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` }, body: gqlBody });
      const body = (await res.json()) as { data?: { spendReport: unknown[] } };
      if (!body.data) throw new Error(JSON.stringify(body));
    });
    await gw.close();

    const out = {
      machine: `${os.cpus()[0]?.model ?? 'cpu'} (${os.cpus().length} cores), ${Math.round(os.totalmem() / 2 ** 30)} GiB, PostgreSQL 18 embedded, default settings`,
      date: new Date().toISOString().slice(0, 10),
      tasks: TASKS,
      projects: PROJECTS,
      days: DAYS,
      seedSeconds,
      report: 'one month, grouped by project × model × day',
      groups: rollupRows.length,
      rollupSqlMs: rollup,
      graphqlHttpMs: graphql,
      rawGroupByMs: raw,
      speedupRawVsRollupP50: Math.round(raw.p50 / rollup.p50),
      speedupRawVsGraphqlP50: Math.round(raw.p50 / graphql.p50),
      rollupEqualsRaw: agree,
      coarse: {
        report: 'one month, grouped by project × model',
        groups: coarseGroups,
        rollupSqlMs: coarseRollup,
        rawGroupByMs: coarseRaw,
        speedupRawVsRollupP50: Math.round(coarseRaw.p50 / coarseRollup.p50),
      },
      targets: { p50Ms: 50, speedup: 100 },
    };
    console.log(JSON.stringify(out, null, 2));
    mkdirSync('bench/results', { recursive: true });
    writeFileSync('bench/results/reports.json', JSON.stringify(out, null, 2) + '\n');
    await db.close();
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Tasks straight into the table (the gateway path is benchmarked elsewhere), then the roll-up built from them. */
async function seed(db: Database) {
  const models = MODEL_ROUTES.filter((r) => !['seedream-4.5', 'seedream-5.0'].includes(r.id));
  const catalog = JSON.stringify(models.map((m, i) => ({ i, id: m.id, family: m.family, kind: m.kind, unit: m.kind === 'chat' ? 'CREDITS' : 'USD' })));
  await db.query(`INSERT INTO project (id, name) SELECT gen_random_uuid(), 'project-' || lpad(g::text, 2, '0') FROM generate_series(1, ${PROJECTS}) g`);
  await db.query(`CREATE TEMP TABLE m AS SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(i int, id text, family text, kind text, unit "Unit")`, [catalog]);
  await db.query(`CREATE TEMP TABLE p AS SELECT row_number() OVER (ORDER BY name) - 1 AS i, id FROM project`);
  // Each project uses 6 models; amounts are exact decimals with up to 7 places, like token charges.
  await db.query(`
    INSERT INTO task (project_id, model, family, kind, unit, status, price_basis, price_book_version, exactness,
                      estimate_amount, hold_amount, charge_amount, charge_exactness, accepted_at, settled_at, updated_at)
    SELECT p.id, m.id, m.family, m.kind, m.unit, 'ready', '{}'::jsonb, 1, 'EXACT', a.amount, a.amount, a.amount, 'EXACT', a.at, a.at, a.at
    FROM generate_series(1, ${TASKS}) g
    CROSS JOIN LATERAL (SELECT g % ${PROJECTS} AS pi, (g % ${PROJECTS} * 3 + (g / ${PROJECTS}) % 6) % (SELECT count(*) FROM m) AS mi) k
    JOIN p ON p.i = k.pi JOIN m ON m.i = k.mi
    -- "g * 0" ties the random draws to each row (an uncorrelated LATERAL would be evaluated once).
    CROSS JOIN LATERAL (SELECT (floor(random() * 10000000 + g * 0) / 10000000 * 5)::numeric AS amount,
                               now() - (random() + g * 0) * interval '${DAYS} days' AS at) a`);
  await db.query(`
    INSERT INTO spend_rollup (day, project_id, model, unit, status, tasks, amount)
    SELECT (accepted_at AT TIME ZONE 'UTC')::date, project_id, model, unit, status::text, count(*), sum(charge_amount)
    FROM task GROUP BY 1, 2, 3, 4, 5`);
  await db.query('VACUUM ANALYZE');
}

function rawReport(db: Database, from: Date, to: Date) {
  return db
    .query(
      `SELECT p.name AS k0, t.model AS k1, to_char((t.accepted_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS k2, t.unit,
              sum(t.charge_amount)::text AS amount, count(*)::int AS tasks
       FROM task t JOIN project p ON p.id = t.project_id
       WHERE t.settled_at IS NOT NULL AND t.accepted_at >= $1 AND t.accepted_at < $2
       GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
      [from, to],
    )
    .then((r) => r.rows);
}

function rawCoarse(db: Database, from: Date, to: Date) {
  return db
    .query(
      `SELECT p.name, t.model, t.unit, sum(t.charge_amount)::text AS amount, count(*)::int AS tasks
       FROM task t JOIN project p ON p.id = t.project_id
       WHERE t.settled_at IS NOT NULL AND t.accepted_at >= $1 AND t.accepted_at < $2
       GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
      [from, to],
    )
    .then((r) => r.rows);
}

async function time(runs: number, fn: () => Promise<unknown>) {
  await fn(); // warm-up
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = process.hrtime.bigint();
    await fn();
    ms.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  ms.sort((a, b) => a - b);
  const at = (q: number) => Math.round(ms[Math.min(ms.length - 1, Math.floor(q * ms.length))]! * 10) / 10;
  return { runs, p50: at(0.5), p95: at(0.95), min: at(0) };
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
