/**
 * Reports on a read replica (README "Scaling out"): a real PostgreSQL streaming standby of the
 * gateway's primary, made from the same embedded binaries, and a gateway with
 * REPORTS_DATABASE_URL pointing at it. Reports, the dashboard, the CSV and `spendgate report` read
 * the standby; submissions, settlement and the ledger stay on the primary. Pausing the standby's
 * replay proves where the reports read: their figures stop moving while the primary's go on.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Gateway } from '../../src/bootstrap.js';
import { Database } from '../../src/database/database.js';
import type { EmbeddedDatabase } from '../../src/database/embedded.js';
import {
  ADMIN,
  eventually,
  gateway,
  graphql,
  http,
  pollTask,
  projectWithKey,
  sql,
  submitChat,
} from '../support/harness.js';
import { primaryWithStandby, query, type Pair } from '../support/standby.js';

let pair: Pair;
let primary: EmbeddedDatabase;
let standbyUrl: string;
let gw: Gateway;

beforeAll(async () => {
  pair = await primaryWithStandby();
  primary = pair.primary;
  standbyUrl = pair.standbyUrl;
  gw = await gateway(primary.url, { REPORTS_DATABASE_URL: standbyUrl });
});

afterAll(async () => {
  await gw?.close();
  await pair?.cleanup();
});

const from = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1)).toISOString();
const to = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + 1, 1)).toISOString();

async function reportTotals(): Promise<Record<string, string>> {
  const res = await graphql(
    gw,
    ADMIN,
    `
      query ($f: DateTime!, $t: DateTime!) {
        spendReport(from: $f, to: $t) {
          totals {
            unit
            amount
          }
        }
      }
    `,
    { f: from, t: to },
  );
  expect(res.body.errors).toBeUndefined();
  const rows = res.body.data.spendReport as Array<{ totals: Array<{ unit: string; amount: string }> }>;
  return Object.fromEntries(rows.flatMap((r) => r.totals.map((t) => [t.unit, t.amount])));
}

/** What the primary's ledger says was spent this month, per unit (charges and adjustments). */
async function ledgerTotals(): Promise<Record<string, string>> {
  const rows = await sql(
    gw,
    `SELECT unit::text, sum(amount)::text AS amount FROM ledger_entry WHERE kind IN ('charge', 'adjustment') AND effective_at >= $1 AND effective_at < $2 GROUP BY unit`,
    [from, to],
  );
  return Object.fromEntries(rows.map((r) => [r.unit, r.amount]));
}

const sameTotals = (a: Record<string, string>, b: Record<string, string>) =>
  Object.keys(a).length === Object.keys(b).length && Object.entries(a).every(([unit, amount]) => b[unit] === amount);

const adjust = (projectId: string, amount: string) =>
  graphql(
    gw,
    ADMIN,
    `
      mutation ($p: ID!, $a: Decimal!) {
        adjustLedger(projectId: $p, unit: USD, amount: $a, reason: "replica test")
      }
    `,
    { p: projectId, a: amount },
  );

test('/readyz reports the reports database beside the primary', async () => {
  const res = await http(`${gw.url}/readyz`);
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ status: 'ready', database: 'ok', upstream: 'ok', reportsDatabase: 'ok', reads: 'ok' });
});

test('reports read the replica: a settled task and adjustments appear once replayed, and stop moving while replay is paused', async () => {
  const { projectId, key } = await projectWithKey(gw, 'replica-team');
  // A chat task, submitted and settled on the primary.
  const submitted = await submitChat(gw, key, {
    model: 'gpt-5.6-luna',
    messages: [{ role: 'user', content: 'Hello' }],
    max_tokens: 50,
  });
  expect(submitted.status).toBe(200);
  const taskId = submitted.body.data.taskId;
  await eventually(async () => ['ready', 'failed'].includes((await pollTask(gw, key, taskId)).body?.data?.status));
  expect((await adjust(projectId, '12.50')).body.errors).toBeUndefined();

  const settled = await ledgerTotals();
  expect(settled.USD).toBe('12.5');
  await eventually(async () => sameTotals(await reportTotals(), settled));

  // Replay paused: the primary moves on (12.5 + 1.25 = 13.75 USD), the report does not.
  await query(standbyUrl, 'SELECT pg_wal_replay_pause()');
  // A pause is requested, not immediate: wait until the standby says it is paused.
  await eventually(
    async () => (await query(standbyUrl, 'SELECT pg_get_wal_replay_pause_state() AS s'))[0].s === 'paused',
  );
  try {
    expect((await adjust(projectId, '1.25')).body.errors).toBeUndefined();
    expect((await ledgerTotals()).USD).toBe('13.75');
    await new Promise((r) => setTimeout(r, 300));
    expect((await reportTotals()).USD).toBe('12.5');
    const csv = await http(`${gw.url}/reports/spend.csv?from=${from}&to=${to}`, { key: ADMIN });
    expect(csv.status).toBe(200);
    expect(csv.text.split('\n')).toContain('USD,12.5,0,0,0,0,0,0,0,0,0,0'); // no groupBy: one row per unit
  } finally {
    await query(standbyUrl, 'SELECT pg_wal_replay_resume()');
  }
  await eventually(async () => (await reportTotals()).USD === '13.75');

  // The dashboard reads the replica too, and agrees with it.
  const dash = await graphql(gw, ADMIN, '{ dashboard { monthToDate { unit amount } } }');
  expect(dash.body.data.dashboard.monthToDate).toContainEqual({ unit: 'USD', amount: '13.75' });
});

test('`spendgate report` reads REPORTS_DATABASE_URL without migrating it', async () => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['dist/src/cli/main.js', 'report', '--from', from, '--to', to, '--group-by', 'project', '--format', 'json'],
    {
      env: { PATH: process.env.PATH, REPORTS_DATABASE_URL: standbyUrl, DATABASE_URL: primary.url },
    },
  );
  const rows = JSON.parse(stdout) as Array<{ unit: string; amount: string }>;
  const expected = await ledgerTotals();
  expect(Object.fromEntries(rows.map((r) => [r.unit, r.amount]))).toEqual(expected);
});

test('the reports pool is read-only even when its URL names the primary by mistake', async () => {
  const db = new Database(primary.url, 1, { readOnly: true });
  try {
    await expect(db.query(`UPDATE project SET name = name`)).rejects.toMatchObject({ code: '25006' }); // read_only_sql_transaction
  } finally {
    await db.close();
  }
});

test('the replica down: /readyz stays 200 but says "degraded" and names it; submissions go on; reports refuse', async () => {
  const { key } = await projectWithKey(gw);
  await pair.stopStandby();
  const ready = await http(`${gw.url}/readyz`);
  expect(ready.status).toBe(200); // the money path serves: a load balancer must keep this instance
  expect(ready.body).toMatchObject({ status: 'degraded', database: 'ok', upstream: 'ok' });
  expect(ready.body.reportsDatabase).toMatch(/^unreachable: /);
  const submitted = await submitChat(gw, key, {
    model: 'gpt-5.6-luna',
    messages: [{ role: 'user', content: 'Hi' }],
    max_tokens: 20,
  });
  expect(submitted.status).toBe(200);
  // A report now fails as any database outage does: said so, no figures made up, no internal address.
  const report = await graphql(
    gw,
    ADMIN,
    `
      query ($f: DateTime!, $t: DateTime!) {
        spendReport(from: $f, to: $t) {
          keys
        }
      }
    `,
    { f: from, t: to },
  );
  expect(report.body.data).toBeNull();
  expect(report.body.errors).toMatchObject([
    {
      message: expect.stringMatching(/^the database is unavailable/),
      extensions: { code: 'SERVICE_UNAVAILABLE', status: 503 },
    },
  ]);
  const csv = await http(`${gw.url}/reports/spend.csv?from=${from}&to=${to}`, { key: ADMIN });
  expect(csv.status).toBe(503);
  expect(csv.body).toMatchObject({ code: 5030 });
});
