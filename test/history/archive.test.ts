/**
 * Archiving a closed month (decisions §18), through the CLI, GraphQL and the poll: October's tasks,
 * charge lines and ledger entries go to Parquet (read here with DuckDB: the costs equal October's
 * statement), its partitions are dropped, and everything that read them still answers the same:
 * spendReport, budgets (a budget made afterwards counts October too), reconcile, ledger verify. A
 * task of October says it is archived; two left open settle afterwards as prior-period items.
 * Restored, October is back; archived again, its files are the same bytes.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import type { Gateway } from '../../src/bootstrap.js';
import { LedgerSealer } from '../../src/ledger/ledger-sealer.js';
import { reconcile } from '../../src/ledger/reconcile.js';
import { Decimal } from '../../src/pricing/money.js';
import { spendgate } from '../support/cli.js';
import { acceptedTask, holdFor, settleAsImage } from '../support/builders.js';
import { ADMIN, freshDatabase, gateway, graphql, http, pollTask, projectWithKey, sql } from '../support/harness.js';

const ARCHIVE_DIR = mkdtempSync(path.join(tmpdir(), 'spendgate-archive-'));
const OCT = { from: '2026-10-01T00:00:00Z', to: '2026-11-01T00:00:00Z' };

let url: string;
let gw: Gateway;
let projectId: string;
let key: string;
const tasks: Array<{ taskId: string; upstream: string; user: string }> = [];

const cli = (...args: string[]) => spendgate({ DATABASE_URL: url, ARCHIVE_DIR }, ...args);

const settle = (taskId: string) => settleAsImage(gw, taskId);

/** What a reader sees of October and of the budgets. */
async function figures() {
  const report = await graphql(
    gw,
    ADMIN,
    `
      query ($from: DateTime!, $to: DateTime!) {
        byUser: spendReport(from: $from, to: $to, groupBy: ["user", "month"]) {
          keys
          totals {
            unit
            amount
          }
          tasks
        }
        byDay: spendReport(from: $from, to: $to, groupBy: ["project", "model", "day"]) {
          keys
          totals {
            unit
            amount
          }
          tasks
        }
      }
    `,
    OCT,
  );
  const budgets = await graphql(
    gw,
    ADMIN,
    'query($p: ID!) { budgetStatus(projectId: $p) { budgetId scope user period limit spent held } }',
    { p: projectId },
  );
  expect(report.body.errors).toBeUndefined();
  expect(budgets.body.errors).toBeUndefined();
  return { report: report.body.data, budgets: budgets.body.data };
}

async function fileDigests() {
  const res = await graphql(gw, ADMIN, '{ archivedMonths { month rows digests { file rows sha256 } } }');
  return res.body.data.archivedMonths;
}

beforeAll(async () => {
  url = await freshDatabase();
  gw = await gateway(url, { POLLER_ENABLED: 'false', LEDGER_SEAL_MS: '0', ARCHIVE_DIR });
  ({ projectId, key } = await projectWithKey(gw, 'archived'));
  for (const [scope, limit] of [
    ['PROJECT', '100'],
    ['EACH_USER', '1'],
  ] as const)
    await graphql(
      gw,
      ADMIN,
      'mutation($p: ID!, $l: Decimal!, $s: BudgetScope!) { setBudget(projectId: $p, unit: USD, limit: $l, period: LIFETIME, hard: true, scope: $s) }',
      { p: projectId, l: limit, s: scope },
    );
  await graphql(
    gw,
    ADMIN,
    'mutation($p: ID!) { setBudget(projectId: $p, unit: USD, limit: "50", period: DAILY, hard: false) }',
    { p: projectId },
  );
  for (let i = 0; i < 40; i++) {
    const user = `u${i % 4}`;
    const upstream = String(910_000 + i);
    const at = new Date(Date.UTC(2026, 9, 5 + (i % 20), i % 24, 7));
    const held = await acceptedTask(gw, { projectId, upstreamTaskId: upstream, acceptedAt: at, endUser: user });
    tasks.push({ taskId: held.taskId, upstream, user });
  }
  for (const t of tasks.slice(0, 38)) expect((await settle(t.taskId)).settled).toBe(true);
  const closed = await graphql(gw, ADMIN, 'mutation { closeMonth(month: "2026-10") { month } }');
  expect(closed.body.errors).toBeUndefined();
  // Everything sealed, the close's carried holds too (an archive takes only sealed entries).
  await new LedgerSealer(gw.db).sealAll();
}, 120_000);
afterAll(async () => gw?.close());

test('October archived: files that DuckDB reads, partitions gone, every figure the same', async () => {
  const before = await figures();
  expect(await reconcile(gw.db)).toEqual([]);
  // 40 holds, 38 releases and charges, and the close's release of the 2 holds it carried to November.
  const [{ n: entries }] = await sql<{ n: number }>(
    gw,
    `SELECT count(*)::int AS n FROM ledger_entry WHERE effective_at >= $1 AND effective_at < $2`,
    [OCT.from, OCT.to],
  );
  expect(entries).toBe(118);

  const archived = await cli('archive', '2026-10');
  expect(archived).toEqual({
    code: 0,
    out: expect.stringMatching(/^archived 2026-10: 40 tasks, 118 ledger entries, 2 kept/),
  });
  expect(
    await sql(gw, `SELECT to_regclass('task_y2026m10')::text AS t, to_regclass('ledger_entry_y2026m10')::text AS l`),
  ).toEqual([{ t: null, l: null }]);
  // The two still open wait in the default partition.
  expect(await sql(gw, 'SELECT count(*)::int AS n FROM task_default')).toEqual([{ n: 2 }]);

  const months = await fileDigests();
  expect(months).toEqual([
    {
      month: '2026-10',
      rows: expect.any(Number),
      digests: expect.arrayContaining([
        { file: 'tasks.parquet', rows: 40, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) },
        { file: 'ledger_entries.parquet', rows: 118, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) },
        { file: 'costs.parquet', rows: expect.any(Number), sha256: expect.stringMatching(/^[0-9a-f]{64}$/) },
      ]),
    },
  ]);

  // The files open in DuckDB; the FOCUS costs add up to October's statement.
  const duck = await (await DuckDBInstance.create(':memory:')).connect();
  const dir = path.join(ARCHIVE_DIR, '2026-10');
  const costs = await duck.runAndReadAll(
    `SELECT x_Unit AS unit, sum(BilledCost)::VARCHAR AS billed, count(*)::INT AS n FROM read_parquet('${dir}/costs.parquet') GROUP BY ALL`,
  );
  const statement = await sql<{ totals: Array<{ unit: string; amount: string }> }>(
    gw,
    `SELECT s.body->'totals' AS totals FROM statement s JOIN month_close c ON c.id = s.close_id WHERE c.month = '2026-10-01'`,
  );
  expect(statement[0]!.totals).toEqual([{ unit: 'USD', amount: '1.52', tasks: 38 }]);
  expect(costs.getRowObjects().map((r) => ({ unit: r.unit, billed: new Decimal(String(r.billed)).toFixed() }))).toEqual(
    [{ unit: 'USD', billed: '1.52' }],
  );
  const counted = await duck.runAndReadAll(
    `SELECT (SELECT count(*) FROM read_parquet('${dir}/tasks.parquet'))::INT AS tasks,
            (SELECT count(*) FROM read_parquet('${dir}/ledger_entries.parquet') WHERE kind = 'charge')::INT AS charges`,
  );
  expect(counted.getRowObjects()).toEqual([{ tasks: 40, charges: 38 }]);
  duck.closeSync();

  expect(await figures()).toEqual(before);
  expect(await reconcile(gw.db)).toEqual([]);
  const verified = await cli('ledger', 'verify');
  expect(verified).toEqual({
    code: 0,
    out: expect.stringMatching(/^ledger verify: \d+ entries in \d+ seals unchanged; 1 closed-month/),
  });
});

test('an archived task says so; a budget made now counts the archived month', async () => {
  const settledTask = tasks[0]!;
  const lookup = await graphql(gw, ADMIN, `{ task(taskId: "${settledTask.upstream}") { taskId } }`);
  expect(lookup.body.errors?.[0]?.message).toMatch(
    /accepted in 2026-10, which is archived: `spendgate archive restore 2026-10`/,
  );
  const poll = await pollTask(gw, key, settledTask.upstream);
  expect(poll.status).toBe(404);
  expect(JSON.stringify(poll.body)).toMatch(/archived/);
  expect((await pollTask(gw, key, '999999999')).body).not.toMatchObject({ message: expect.stringMatching(/archived/) });
  // A drill-down over the month would miss its tasks: refused, naming it, not answered short.
  for (const query of [
    `{ taskTotals(filter: { postedFrom: "${OCT.from}", postedTo: "${OCT.to}" }) { tasks } }`,
    '{ tasks(filter: { from: "2026-10-20T00:00:00Z", to: "2026-11-02T00:00:00Z" }) { edges { node { taskId } } } }',
  ]) {
    const drill = await graphql(gw, ADMIN, query);
    expect(drill.body.errors?.[0]?.message).toMatch(/^the range holds 2026-10, which is archived/);
  }

  // u1 spent 10 × 0.04 in October; a lifetime budget of 0.45 set now has room for one more image.
  const set = await graphql(
    gw,
    ADMIN,
    'mutation($p: ID!) { setBudget(projectId: $p, unit: USD, limit: "0.45", period: LIFETIME, hard: true, scope: USER, scopeValue: "u1") }',
    { p: projectId },
  );
  expect(set.body.errors).toBeUndefined();
  expect((await holdFor(gw, { projectId, endUser: 'u1' })).outcome).toBe('held');
  expect((await holdFor(gw, { projectId, endUser: 'u1' })).outcome).toBe('refused');
  expect(await reconcile(gw.db)).toEqual([]);
});

test('restored, October is back; archived again, the same files', async () => {
  const first = await fileDigests();
  expect(await cli('archive', 'restore', '2026-10')).toEqual({
    code: 0,
    out: 'restored 2026-10: 40 tasks, 118 ledger entries\n',
  });
  expect(
    await sql(gw, `SELECT count(*)::int AS n FROM task WHERE id = ANY($1::bigint[])`, [tasks.map((t) => t.taskId)]),
  ).toEqual([{ n: 40 }]);
  const lookup = await graphql(gw, ADMIN, `{ task(taskId: "${tasks[0]!.upstream}") { taskId status } }`);
  expect(lookup.body.data).toEqual({ task: { taskId: tasks[0]!.upstream, status: 'ready' } });
  expect((await cli('archive', 'list')).out).toBe('no month is archived\n');
  expect(await reconcile(gw.db)).toEqual([]);

  expect((await cli('archive', '2026-10')).code).toBe(0);
  expect(await fileDigests()).toEqual(first);
});

test('a task of the archived month settles late, as a prior-period item; restored, it keeps its settlement', async () => {
  const late = tasks[39]!;
  expect((await settle(late.taskId)).settled).toBe(true);
  const entries = await sql<{ kind: string; month: string; belongs: string }>(
    gw,
    `SELECT kind::text, to_char(effective_at, 'YYYY-MM') AS month, to_char(belongs_to, 'YYYY-MM') AS belongs FROM ledger_entry WHERE task_id = $1 ORDER BY id`,
    [late.taskId],
  );
  // October's entries are in its files; the close carried the hold to November.
  expect(entries).toEqual([
    { kind: 'hold', month: '2026-11', belongs: null },
    { kind: 'release', month: '2026-11', belongs: '2026-10' },
    { kind: 'charge', month: '2026-11', belongs: '2026-10' },
  ]);
  expect(await reconcile(gw.db)).toEqual([]);
  expect((await cli('ledger', 'verify')).code).toBe(0);

  expect((await cli('archive', 'restore', '2026-10')).code).toBe(0);
  expect(
    await sql(gw, 'SELECT status::text, charge_amount::text AS charge FROM task WHERE id = $1', [late.taskId]),
  ).toEqual([{ status: 'ready', charge: '0.04' }]);
  expect(await reconcile(gw.db)).toEqual([]);
  expect((await cli('ledger', 'verify')).code).toBe(0);
});

test('refusals: an open month, a month archived twice, a reopened archived month, no ARCHIVE_DIR', async () => {
  // This month: a month is archived a week after it ends (it was 2026-11, refused only until 2026-12-08).
  const thisMonth = new Date().toISOString().slice(0, 7);
  expect(await cli('archive', thisMonth)).toEqual({
    code: 1,
    out: expect.stringMatching(new RegExp(`${thisMonth}: it can be archived from`)),
  });
  expect((await cli('archive', '2026-10')).code).toBe(0);
  expect(await cli('archive', '2026-10')).toEqual({ code: 1, out: 'spendgate: month 2026-10: already archived\n' });
  const reopen = await graphql(gw, ADMIN, 'mutation { reopenMonth(month: "2026-10", reason: "late invoice") }');
  expect(reopen.body.errors?.[0]?.message).toMatch(/2026-10 is archived: restore it first/);
  const noDir = await spendgate({ DATABASE_URL: url }, 'archive', 'restore', '2026-10');
  expect(noDir).toEqual({ code: 1, out: expect.stringMatching(/ARCHIVE_DIR is not set/) });
  expect(await cli('archive', 'bogus')).toMatchObject({ code: 2 });
  expect(
    await http(`${gw.url}/graphql`, { key: ADMIN, body: { query: '{ archivedMonths { month } }' } }),
  ).toMatchObject({
    status: 200,
  });
});
