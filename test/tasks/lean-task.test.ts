/**
 * The task table on the submission path (decisions §18; docs/architecture.md "The task table's
 * indexes and triggers"). The record of the vendor's acceptance changes no indexed column and no
 * column of a partial index's predicate, so PostgreSQL rewrites the row on its page (a HOT
 * update) and writes no index entry; before 20261127210000_lean_task every record was a new row
 * version with an entry in every index (status was in two partial indexes' predicates). An open
 * task is found through task_open by the first poll's time the hold gave it.
 */
import pg from 'pg';
import type { Gateway } from '../../src/bootstrap.js';
import { chatBody, heldTask } from '../support/builders.js';
import { freshDatabase, gateway, projectWithKey, sql } from '../support/harness.js';

let gw: Gateway;
let url: string;
let projectId: string;

beforeAll(async () => {
  url = await freshDatabase();
  gw = await gateway(url, { POLLER_ENABLED: 'false' });
  ({ projectId } = await projectWithKey(gw, 'lean'));
}, 60_000);

afterAll(async () => {
  await gw?.close();
});

/** Updates of task's partitions this connection made, and how many of them were HOT. */
async function updates(client: pg.Client): Promise<{ all: number; hot: number }> {
  await client.query('SELECT pg_stat_force_next_flush()'); // this backend's counts, handed over now
  const { rows } = await client.query<{ all: string; hot: string }>(
    `SELECT coalesce(sum(n_tup_upd), 0)::text AS all, coalesce(sum(n_tup_hot_upd), 0)::text AS hot
     FROM pg_stat_user_tables s JOIN pg_inherits i ON i.inhrelid = s.relid WHERE i.inhparent = 'task'::regclass`,
  );
  return { all: Number(rows[0]!.all), hot: Number(rows[0]!.hot) };
}

test("the record of an acceptance rewrites the task on its page: a HOT update, by either record function; the hold's first poll is kept", async () => {
  const one = await heldTask(gw, { projectId, body: chatBody() });
  const batch = await heldTask(gw, { projectId, body: chatBody() });
  const held = await sql<{ id: string; due: boolean }>(
    gw,
    `SELECT id::text, next_poll_at = accepted_at + interval '1 second' AS due FROM task WHERE id = ANY($1::bigint[]) ORDER BY id`,
    [[one.taskId, batch.taskId]],
  );
  expect(held.map((r) => r.due)).toEqual([true, true]);

  const client = new pg.Client(url);
  await client.connect();
  try {
    const before = await updates(client);
    await client.query('SELECT spendgate_record_one($1, $2, $3, $4)', [
      one.taskId,
      'vd_1',
      '770001',
      '{"taskId":770001}',
    ]);
    await client.query('SELECT spendgate_record_accepted($1::bigint[], $2::text[], $3::bigint[], $4::text[])', [
      [batch.taskId],
      ['vd_2'],
      ['770002'],
      ['{"taskId":770002}'],
    ]);
    const after = await updates(client);
    expect(after.all - before.all).toBe(2);
    expect(after.hot - before.hot).toBe(2);
  } finally {
    await client.end();
  }

  const recorded = await sql<{ status: string; due: boolean }>(
    gw,
    `SELECT status::text, next_poll_at = accepted_at + interval '1 second' AS due FROM task WHERE id = ANY($1::bigint[]) ORDER BY id`,
    [[one.taskId, batch.taskId]],
  );
  expect(recorded).toEqual([
    { status: 'processing', due: true },
    { status: 'processing', due: true },
  ]);
  // The poller's claim can find them through task_open (its predicate is implied by the claim's).
  const client2 = new pg.Client(url);
  await client2.connect();
  try {
    await client2.query('SET enable_seqscan = off');
    const { rows } = await client2.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN SELECT id FROM task d WHERE d.settled_at IS NULL AND d.next_poll_at <= clock_timestamp() AND d.status = 'processing'`,
    );
    expect(rows.map((r) => r['QUERY PLAN']).join('\n')).toMatch(/Scan (using|on) task_\w*next_poll_at_idx/);
  } finally {
    await client2.end();
  }
});
