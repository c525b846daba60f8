/**
 * Days, months and hours are UTC whatever the database server's TimeZone and the gateway process's
 * TZ (src/database/utc.ts). The server here runs in Asia/Kolkata (UTC+05:30, as a Debian server
 * set up in India would: initdb takes the machine's zone), and a second gateway, the real entry
 * point as a child process, in TZ=Asia/Kolkata too. Before, the hourly roll-up was keyed at half
 * past (anomaly alerts look up whole UTC hours, and found nothing), a vendor statement's days ran
 * 18:30 to 18:30 UTC (a task of its day's last hours was never "ours, not billed"), and a process
 * east of UTC wrote every FOCUS day as the day before.
 */
import { parse } from 'csv-parse/sync';
import pg from 'pg';
import type { Gateway } from '../../src/bootstrap.js';
import {
  ADMIN,
  freshDatabase,
  gateway,
  http,
  projectWithKey,
  spawnGateway,
  sql,
  type ChildGateway,
} from '../support/harness.js';
import { items, postStatement, settledTask, statement } from '../support/statements.js';

const ZONE = 'Asia/Kolkata';
const DAY = 86_400_000;
const today = Date.parse(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`);
const day = new Date(today - DAY).toISOString().slice(0, 10);
const at = (time: string) => new Date(`${day}T${time}Z`);

let gw: Gateway;
let child: ChildGateway;
let projectId: string;

beforeAll(async () => {
  const url = await freshDatabase();
  const client = new pg.Client(url);
  await client.connect();
  const name = (await client.query<{ db: string }>('SELECT current_database() AS db')).rows[0]!.db;
  await client.query(`ALTER DATABASE "${name}" SET timezone TO '${ZONE}'`);
  // A session that does not say otherwise is in the server's zone: the ground this test stands on.
  await client.end();
  const other = new pg.Client(url);
  await other.connect();
  expect((await other.query<{ TimeZone: string }>('SHOW TimeZone')).rows[0]!.TimeZone).toBe(ZONE);
  await other.end();

  const env = { POLLER_ENABLED: 'false', LEDGER_SEAL_MS: '0', EARLY_WARNING_MS: '0' };
  gw = await gateway(url, env);
  child = await spawnGateway({ ...env, DATABASE_URL: url, ADMIN_TOKEN: ADMIN, TZ: ZONE, LOG_LEVEL: 'silent' });
  projectId = (await projectWithKey(gw, 'time-zones')).projectId;
  await settledTask(gw, projectId, 6_100_001, '0.04', at('10:10:00'));
  await settledTask(gw, projectId, 6_100_002, '0.04', at('23:30:00'));
}, 60_000);
afterAll(async () => {
  child?.proc.kill('SIGTERM');
  await child?.exited;
  await gw?.close();
});

test("the gateway's sessions are in UTC whatever the server's zone", async () => {
  expect(await sql(gw, 'SHOW TimeZone')).toEqual([{ TimeZone: 'UTC' }]);
});

test('the hourly roll-up is keyed by whole UTC hours, where anomaly alerts look', async () => {
  const hours = await sql(
    gw,
    `SELECT to_char(hour AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI') AS hour FROM spend_hourly
     WHERE dimension = 'project' AND project_id = $1 ORDER BY 1`,
    [projectId],
  );
  expect(hours.map((h) => h.hour)).toEqual([`${day}T10:00`, `${day}T23:00`]);
});

test("a statement's days are UTC days: a task of its day's last hours that it does not bill is ours, not billed", async () => {
  const posted = await postStatement(gw, statement([[6_100_001, `${day}T10:15:00Z`, '0.04']]));
  expect(posted.status).toBe(201);
  expect((await items(gw, posted.body.id)).map((i) => [i.class, i.vendorTaskId])).toEqual([
    ['ours_not_billed', '6100002'],
  ]);
});

test('a gateway east of UTC writes FOCUS days as their UTC days', async () => {
  const to = new Date(today).toISOString().slice(0, 10);
  const res = await http(`${child.url}/reports/focus.csv?from=${day}&to=${to}`, { key: ADMIN });
  expect(res.status).toBe(200);
  const rows = parse(res.text, { columns: true }) as Array<Record<string, string>>;
  expect(rows.length).toBeGreaterThan(0);
  expect([...new Set(rows.map((r) => r.ChargePeriodStart))]).toEqual([`${day}T00:00:00Z`]);
});
