/**
 * A month's close beside the traffic (decisions §13). A close holds month_close in EXCLUSIVE mode,
 * which every movement of a past month waits for (settlements took it in ROW SHARE whatever their
 * month), and the locks of the projects whose holds it carries, which their submissions wait for.
 * It used to write its statements (every entry of the month read for their digests, a PDF each)
 * under those locks: a close of 3 million entries kept settlements and the carried projects'
 * submissions waiting ~46 s, and the connections they held with them. Now the statements are
 * written after the close commits. Here the close is parked while it writes them (the test holds
 * the statement table), and a submission of a carried project and a settlement must be answered
 * meanwhile; then the close completes with its statement.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Gateway } from '../../src/bootstrap.js';
import { holdFor } from '../support/builders.js';
import { spendgate } from '../support/cli.js';
import {
  ADMIN,
  eventually,
  freshDatabase,
  gateway,
  graphql,
  pollTask,
  projectWithKey,
  submitGeneration,
  type HttpResult,
} from '../support/harness.js';

let url: string;
let gw: Gateway;
let side: pg.Client;
const now = new Date();
const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
const lastMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)).toISOString().slice(0, 7);
const IMAGE = { model: 'seedream-4.0', prompt: 'a fox', resolution: '1K' };

beforeAll(async () => {
  url = await freshDatabase();
  gw = await gateway(url);
  side = new pg.Client({ connectionString: url });
  await side.connect();
});
afterAll(async () => {
  await side.end();
  await gw.close();
});

/** `answer` within 10 s (it takes milliseconds), or what it was waiting for. */
async function within<T>(what: string, answer: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what}: no answer within 10 s while the close wrote its statements`)),
      10_000,
    );
  });
  try {
    return await Promise.race([answer, late]);
  } finally {
    clearTimeout(timer);
  }
}

test('a submission of a project whose hold the close carried, and a settlement, are answered while the close writes its statements', async () => {
  const { projectId, key } = await projectWithKey(gw);
  // A task in flight at last month's end: the close carries its hold into this month.
  const open = await holdFor(gw, { projectId, acceptedAt: new Date(monthStart.getTime() - 60_000) });
  expect(open.outcome).toBe('held');
  const first = await submitGeneration(gw, key, IMAGE);
  expect(first.status).toBe(200);
  const taskId = (first.body as { data: { taskId: number } }).data.taskId;

  await side.query('BEGIN');
  await side.query('LOCK TABLE statement IN SHARE MODE'); // the close's statements wait for it
  const closing = graphql(
    gw,
    ADMIN,
    `
      mutation ($m: String!) {
        closeMonth(month: $m) {
          month
          carriedTasks
          statements
        }
      }
    `,
    {
      m: lastMonth,
    },
  );
  try {
    // The close waits to write its statement (read on a connection of no transaction: a
    // transaction sees pg_stat_activity as it first read it).
    await eventually(async () => {
      const { rows } = await gw.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO statement %'`,
      );
      return rows[0]!.n > 0;
    }, 20_000);
    const second: HttpResult = await within('a submission of the carried project', submitGeneration(gw, key, IMAGE));
    expect(second.status).toBe(200);
    // The simulator finishes a task in 200 ms: a poll then settles it (or finds the poller did).
    await within(
      'a settlement',
      eventually(async () => {
        const polled = await pollTask(gw, key, taskId);
        return (polled.body as { data: { status: string } }).data.status === 'ready';
      }),
    );
    const written = await side.query<{ n: number }>('SELECT count(*)::int AS n FROM statement');
    expect(written.rows[0]!.n).toBe(0); // all of that while the close still waited to write it
  } finally {
    await side.query('COMMIT');
  }
  const closed = await closing;
  expect(closed.body.errors).toBeUndefined();
  expect(closed.body.data).toEqual({ closeMonth: { month: lastMonth, carriedTasks: 1, statements: 1 } });
}, 60_000);

test('a close whose statements were never written (its process ended between its two transactions) says so when closed again', async () => {
  const before = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 2, 1));
  const label = before.toISOString().slice(0, 7);
  const { projectId } = await projectWithKey(gw);
  expect((await holdFor(gw, { projectId, acceptedAt: new Date(before.getTime() + 86_400_000) })).outcome).toBe('held');
  // What the close's first transaction leaves when nothing follows it: the close, no statement.
  await side.query(
    `INSERT INTO month_close (month, closed_by, last_entry_id, carried_tasks) SELECT $1::date, 'interrupted', max(id), 0 FROM ledger_entry`,
    [`${label}-01`],
  );
  const again = await graphql(
    gw,
    ADMIN,
    `
      mutation ($m: String!) {
        closeMonth(month: $m) {
          month
        }
      }
    `,
    { m: label },
  );
  expect(again.body.errors?.[0]?.message).toBe(
    `month: ${label} is closed, but its statements were not written (the close was interrupted): an owner reopens it (reopenMonth) and closes it again`,
  );
  expect(again.body.errors?.[0]?.extensions?.code).toBe('CONFLICT');
  // Nor is it archived so: its entries would be gone before its statements were written.
  const archiveDir = mkdtempSync(path.join(tmpdir(), 'spendgate-archive-'));
  const archived = await spendgate({ DATABASE_URL: url, ARCHIVE_DIR: archiveDir }, 'archive', label);
  expect(archived.out).toContain(
    `month ${label}: its close was interrupted before its statements were written: an owner reopens it and closes it again first`,
  );
  expect(archived.code).not.toBe(0);
  // The way out it names: reopened (the latest closed month is a later one: it goes first), closed again.
  const ask = (query: string) =>
    graphql(gw, ADMIN, query, { m: label, l: lastMonth, r: 'its statements were not written' });
  const reopened = await ask(
    `mutation($l: String!, $m: String!, $r: String!) { a: reopenMonth(month: $l, reason: $r) b: reopenMonth(month: $m, reason: $r) }`,
  );
  expect(reopened.body).toEqual({ data: { a: true, b: true } });
  const closed = await ask(
    `mutation($m: String!, $l: String!) { a: closeMonth(month: $m) { statements } b: closeMonth(month: $l) { statements } }`,
  );
  // Last month's second statement: this project, whose hold the close of its month carried into it.
  expect(closed.body).toEqual({ data: { a: { statements: 1 }, b: { statements: 2 } } });
});
