/**
 * Migrations: the committed current shape (prisma/schema.sql) is exactly what migrating from zero
 * gives, the datamodel has no change without its migration, and migrations that move data keep
 * every figure a finance reader could see.
 */
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { migrate, serverRefusal } from '../../src/database/migrate.js';
import { dumpSchema } from '../../src/database/schema-dump.js';
import { chatBody, imageBody, videoBody } from '../support/builders.js';
import {
  ADMIN,
  emptyDatabase,
  freshDatabase,
  gateway,
  graphql,
  http,
  keyWithTags,
  pollTask,
  projectWithKey,
  sql,
  submitChat,
  submitGeneration,
} from '../support/harness.js';

const BEFORE_ESTIMATE_LINES_MOVED = '20261122150000_hold_idempotency_fast_path';
const PROJECT = '00000000-0000-4000-8000-0000000000a1';

/** A glm-5.3 chat hold as the gateway sent it: 6 input tokens × 1400/1M = 0.0084, 1,000 output × 4900/1M = 4.9. */
const GLM_HOLD = {
  i: 0,
  project_id: PROJECT,
  api_key_id: null,
  model: 'glm-5.3',
  family: 'glm',
  kind: 'chat',
  unit: 'CREDITS',
  hold_amount: '4.9084',
  estimate_amount: '4.9084',
  exactness: 'ESTIMATE',
  estimate_tier: 'standard',
  estimate_warnings: [],
  price_basis: { kind: 'chat', inputTokensEstimate: 6, maxTokens: 1000, maxTokensSource: 'request' },
  price_book_version: 1,
  lines: [
    { component: 'input', quantity: '6', rate: '1400', per: '1000000', amount: '0.0084' },
    { component: 'output', quantity: '1000', rate: '4900', per: '1000000', amount: '4.9' },
  ],
  idempotency_key: null,
  request_hash: null,
  accepted_at: null,
};

test('prisma/schema.sql is exactly the schema that migrating an empty database produces', async () => {
  const url = await emptyDatabase();
  await migrate(url);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const dumped = await dumpSchema(client);
    // If this fails after a new migration: `npm run schema:dump`, then review and commit the diff.
    expect(dumped).toBe(readFileSync('prisma/schema.sql', 'utf8'));
    expect(dumped).toContain('CREATE OR REPLACE FUNCTION public.spendgate_place_holds(p_requests json)');
  } finally {
    await client.end();
  }
});

test('schema.prisma has no change that a migration does not carry (the snapshot is the migrated datamodel)', () => {
  // migration:create diffs schema.prisma against this snapshot and then moves it forward.
  expect(readFileSync('prisma/schema.prisma', 'utf8')).toBe(
    readFileSync('prisma/migrations/schema.snapshot.prisma', 'utf8'),
  );
});

test('estimate lines written before they moved onto the task are kept, in order, with every figure exact', async () => {
  const url = await emptyDatabase();
  await migrate(url, () => {}, { upTo: BEFORE_ESTIMATE_LINES_MOVED });
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`INSERT INTO project (id, name) VALUES ($1, 'before-the-move')`, [PROJECT]);
    const held = await client.query(`SELECT outcome, task_id::text FROM spendgate_place_holds($1::json)`, [
      JSON.stringify([GLM_HOLD]),
    ]);
    expect(held.rows).toEqual([{ outcome: 'held', task_id: expect.any(String) }]);
    const taskId = held.rows[0].task_id;
    // A settled task's charge lines stay where they are.
    await client.query(
      `INSERT INTO charge_line (task_id, stage, seq, component, quantity, rate, per, amount)
       VALUES ($1, 'charge', 1, 'input', 6, 1400, 1000000, 0.0084), ($1, 'charge', 2, 'output', 812, 4900, 1000000, 3.9788)`,
      [taskId],
    );

    await migrate(url);

    const onTask = await client.query(
      `SELECT l.component, l.quantity::text, l.rate::text, l.per::text, l.amount::text
       FROM task t, unnest(t.estimate_lines) l WHERE t.id = $1`,
      [taskId],
    );
    expect(onTask.rows).toEqual([
      { component: 'input', quantity: '6', rate: '1400', per: '1000000', amount: '0.0084' },
      { component: 'output', quantity: '1000', rate: '4900', per: '1000000', amount: '4.9' },
    ]);
    const rows = await client.query(`SELECT stage, count(*)::int AS n FROM charge_line GROUP BY stage`);
    expect(rows.rows).toEqual([{ stage: 'charge', n: 2 }]);
    // task_line shows what charge_line showed before the move.
    const all = await client.query(
      `SELECT stage, seq, component, amount::text FROM task_line WHERE task_id = $1 ORDER BY stage, seq`,
      [taskId],
    );
    expect(all.rows).toEqual([
      { stage: 'charge', seq: 1, component: 'input', amount: '0.0084' },
      { stage: 'charge', seq: 2, component: 'output', amount: '3.9788' },
      { stage: 'estimate', seq: 1, component: 'input', amount: '0.0084' },
      { stage: 'estimate', seq: 2, component: 'output', amount: '4.9' },
    ]);
    // The estimate's lines still add up to what was held: 0.0084 + 4.9 = 4.9084.
    const sum = await client.query(
      `SELECT sum(amount)::text AS s FROM task_line WHERE task_id = $1 AND stage = 'estimate'`,
      [taskId],
    );
    expect(sum.rows[0].s).toBe('4.9084');
    await expect(
      client.query(
        `INSERT INTO charge_line (task_id, stage, seq, component, quantity, rate, per, amount) VALUES ($1, 'estimate', 3, 'x', 1, 1, 1, 1)`,
        [taskId],
      ),
    ).rejects.toThrow(/charge_line_charge_only/);
    // A hold placed after the move writes its lines on the task, refusing a figure that is not a number.
    const after = await client.query(`SELECT outcome, task_id::text FROM spendgate_place_holds($1::json)`, [
      JSON.stringify([GLM_HOLD]),
    ]);
    const lines = await client.query(`SELECT array_length(estimate_lines, 1) AS n FROM task WHERE id = $1`, [
      after.rows[0].task_id,
    ]);
    expect(lines.rows).toEqual([{ n: 2 }]);
    const bad = { ...GLM_HOLD, lines: [{ ...GLM_HOLD.lines[0], amount: '0.0O84' }] };
    await expect(
      client.query(`SELECT * FROM spendgate_place_holds($1::json)`, [JSON.stringify([bad])]),
    ).rejects.toThrow(/invalid input syntax for type numeric/);
  } finally {
    await client.end();
  }
});

test("spend by who: the migrations' backfill gives exactly what settlement keeps, and every dimension adds up to the totals", async () => {
  const gw = await gateway(await freshDatabase(), { SIMULATOR_DELAY_MS: '600000', POLLER_ENABLED: 'false' });
  try {
    const { projectId } = await projectWithKey(gw);
    const key = await keyWithTags(gw, projectId, ['team=ml']);
    const settle = async (
      submitted: Promise<{ body: { data: { taskId: number } } }>,
      status: 'ready' | 'failed',
      usage?: unknown,
    ) => {
      const taskId = (await submitted).body.data.taskId;
      await http(`${gw.simulatorUrl}/__sim/tasks/${taskId}/complete`, {
        body: usage === undefined ? { status } : { status, usage },
      });
      expect((await pollTask(gw, key, taskId)).body.data.status).toBe(status);
      return taskId;
    };
    const imageTask = await settle(
      submitGeneration(gw, key, imageBody({ n: 2 }), { 'x-spendgate-user': 'alice', 'x-spendgate-tags': 'feature=x' }),
      'ready',
    );
    await settle(submitGeneration(gw, key, videoBody(), { 'x-spendgate-user': 'bob' }), 'failed');
    await settle(submitGeneration(gw, key, videoBody(), { 'x-spendgate-tags': 'feature=y' }), 'ready');
    await settle(submitChat(gw, key, chatBody(), { 'x-spendgate-user': 'alice' }), 'ready', {
      prompt_tokens: 1_000,
      completion_tokens: 100,
    });
    // A day back, but within this month: a correction is dated within the books, which begin this month here.
    const now = new Date();
    const yesterday = new Date(
      Math.max(Date.now() - 86_400_000, Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)),
    ).toISOString();
    for (const vars of [
      { t: String(imageTask), e: null },
      { t: null, e: yesterday },
    ]) {
      const res = await graphql(
        gw,
        ADMIN,
        `
          mutation ($p: ID!, $t: ID, $e: DateTime) {
            adjustLedger(projectId: $p, unit: USD, amount: "-0.0125", reason: "r", taskId: $t, effectiveAt: $e)
          }
        `,
        { p: projectId, ...vars },
      );
      expect(res.body.errors).toBeUndefined();
    }

    const counters = `tasks, unpriced_tasks, amount::text, input_tokens::text, output_tokens::text, cache_read_tokens::text, cache_write_5m_tokens::text,
      cache_write_1h_tokens::text, cache_write_tokens::text, video_seconds::text, images`;
    const snapshot = async () => [
      await sql(
        gw,
        `SELECT dimension, period::text, value, model, unit::text, price_book_version, ${counters} FROM spend_rollup_by ORDER BY dimension, period, value, model, unit, price_book_version`,
      ),
      await sql(
        gw,
        `SELECT period::text, value, unit::text, ${counters} FROM spend_rollup_user ORDER BY period, value, unit`,
      ),
      await sql(
        gw,
        `SELECT period::text, value, unit::text, ${counters} FROM spend_rollup_user_all ORDER BY period, value, unit`,
      ),
    ];
    const kept = await snapshot();
    expect(kept[0]!.length).toBeGreaterThan(6);
    expect(kept[1]!.map((r) => `${r.value} ${r.unit}`)).toEqual([' USD', 'alice CREDITS', 'alice USD', 'bob USD']); // the adjustment without a task is in ''
    expect(kept[2]!.map((r) => `${r.value} ${r.unit}`)).toEqual(['alice CREDITS', 'alice USD', 'bob USD']);
    // Every task is in one apiKey row and one per-project user row: those add up to the totals.
    const measures = `sum(tasks)::int AS tasks, sum(amount)::text AS amount, sum(input_tokens)::text AS input, sum(output_tokens)::text AS output, sum(video_seconds)::text AS seconds, sum(images)::int AS images`;
    const totals = await sql(
      gw,
      `SELECT date_trunc('month', day)::date::text AS m, unit::text, ${measures} FROM spend_rollup_total GROUP BY 1, 2 ORDER BY 1, 2`,
    );
    expect(
      await sql(
        gw,
        `SELECT date_trunc('month', period)::date::text AS m, unit::text, ${measures} FROM spend_rollup_by WHERE dimension = 'apiKey' GROUP BY 1, 2 ORDER BY 1, 2`,
      ),
    ).toEqual(totals);
    expect(
      await sql(
        gw,
        `SELECT period::text AS m, unit::text, ${measures} FROM spend_rollup_user GROUP BY 1, 2 ORDER BY 1, 2`,
      ),
    ).toEqual(totals);
    // Named users over projects are the per-project rows without the '' ones.
    expect(
      await sql(
        gw,
        `SELECT period::text AS m, value, unit::text, ${measures} FROM spend_rollup_user WHERE value <> '' GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
      ),
    ).toEqual(
      await sql(
        gw,
        `SELECT period::text AS m, value, unit::text, ${measures} FROM spend_rollup_user_all GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
      ),
    );

    // What the migrations compute from tasks and the ledger for spend settled before them: the
    // backfill of the one that introduced spend_rollup_by, then the move of its user rows.
    const migration = readFileSync('prisma/migrations/20261123211800_attribution_ledger/migration.sql', 'utf8');
    const backfill = migration.slice(
      migration.indexOf(
        'INSERT INTO spend_rollup_by AS s',
        migration.indexOf('-- Spend by who for what was settled before this migration'),
      ),
    );
    const move = readFileSync('prisma/migrations/20261123221600_user_rollup_ledger/migration.sql', 'utf8');
    await sql(gw, 'DELETE FROM spend_rollup_by; DELETE FROM spend_rollup_user; DELETE FROM spend_rollup_user_all');
    await sql(gw, backfill);
    await sql(gw, move.slice(move.indexOf('-- The user rows kept so far move')));
    expect(await snapshot()).toEqual(kept);
  } finally {
    await gw.close();
  }
});

describe('stored functions: one file each in prisma/functions, applied when its text changes', () => {
  const files = readdirSync('prisma/functions').filter((f) => f.endsWith('.sql'));
  // The migration after which bodies live only in their files (the older migrations stay as they were).
  const LAST_TO_COPY_A_BODY = '20261127120000_resolution_sets_the_net';

  test('every function of the schema has its file, and each file defines that function with its why', async () => {
    const client = new pg.Client({ connectionString: await freshDatabase() });
    await client.connect();
    const rows = await client
      .query<{ name: string; why: string | null }>(
        `SELECT p.proname AS name, obj_description(p.oid, 'pg_proc') AS why FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
         WHERE n.nspname = 'public' AND p.prokind = 'f' ORDER BY 1`,
      )
      .then((r) => r.rows)
      .finally(() => client.end());
    expect(rows.map((r) => `${r.name}.sql`)).toEqual([...files].sort());
    for (const r of rows) expect({ name: r.name, why: (r.why ?? '').length > 20 }).toEqual({ name: r.name, why: true });
    for (const file of files)
      expect(readFileSync(`prisma/functions/${file}`, 'utf8')).toContain(
        `CREATE OR REPLACE FUNCTION public.${file.replace(/\.sql$/, '')}(`,
      );
  });

  test('no migration after the files copies a function body', () => {
    const later = readdirSync('prisma/migrations').filter((n) => !n.includes('.') && n > LAST_TO_COPY_A_BODY);
    for (const name of later)
      expect({
        name,
        copies: /CREATE\s+(OR\s+REPLACE\s+)?FUNCTION/i.test(
          readFileSync(`prisma/migrations/${name}/migration.sql`, 'utf8'),
        ),
      }).toEqual({ name, copies: false });
  });

  test('a function whose text changed is applied again; one that did not is left alone', async () => {
    const url = await emptyDatabase();
    const first = await migrate(url);
    expect(first.filter((n) => n.startsWith('functions/')).length).toBe(files.length);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      // As a database migrated before the file's last edit: another body, another checksum on record.
      await client.query(
        `CREATE OR REPLACE FUNCTION public.spendgate_iso(t timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT 'stale' $$`,
      );
      await client.query(
        `UPDATE "_spendgate_functions" SET checksum = 'an older text' WHERE name = 'functions/spendgate_iso.sql'`,
      );
      expect(await migrate(url)).toEqual(['functions/spendgate_iso.sql']);
      const { rows } = await client.query(`SELECT spendgate_iso('2026-11-27T10:00:00Z') AS iso`);
      expect(rows[0].iso).not.toBe('stale');
      expect(await migrate(url)).toEqual([]);
    } finally {
      await client.end();
    }
  });
});

test('PostgreSQL 15 and later are taken; an older server is refused in one line before anything is written (decisions §17)', async () => {
  expect(serverRefusal(150000, '15.0')).toBeUndefined();
  expect(serverRefusal(180004, '18.4')).toBeUndefined();
  expect(serverRefusal(140012, '14.12')).toBe(
    'the database runs PostgreSQL 14.12: spendgate needs PostgreSQL 15 or later (upgrade it, point DATABASE_URL at a newer server, or leave DATABASE_URL unset for the embedded one)',
  );
  // The server this suite runs on (the embedded 18, or Debian's 15 under npm run test:pg15) passes the
  // same check in migrate.
  const url = await emptyDatabase();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query<{ num: string }>("SELECT current_setting('server_version_num') AS num");
  await client.end();
  expect(Number(rows[0]!.num)).toBeGreaterThanOrEqual(150000);
  await expect(migrate(url)).resolves.toBeDefined();
});
