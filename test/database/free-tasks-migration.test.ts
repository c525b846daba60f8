/**
 * 20261203200000_free_tasks_posted: a task settled free before it (held 0, charged 0, so no entry
 * of its settlement) gets its charge of 0 at its acceptance, where its roll-up counted it, when its
 * month is open; a closed month's sealed entries stay as they were, and a task with any other
 * settlement entry, a refused one or one still in flight gets nothing.
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { freshDatabase } from '../support/harness.js';

const MIGRATION = 'prisma/migrations/20261203200000_free_tasks_posted/migration.sql';
const PROJECT = '00000000-0000-4000-8000-0000000000b2';

/** A seedream-4.0 hold as the gateway sent it, of `amount` (0: a contract made it free), accepted at `at`. */
const hold = (i: number, amount: string, at: string) => ({
  i,
  project_id: PROJECT,
  api_key_id: null,
  model: 'seedream-4.0',
  family: 'seedream',
  kind: 'image',
  unit: 'USD',
  hold_amount: amount,
  estimate_amount: amount,
  exactness: 'EXACT',
  estimate_tier: null,
  estimate_warnings: [],
  price_basis: { kind: 'image', images: 1 },
  price_book_version: 1,
  lines: [{ component: 'images:2K', quantity: '1', rate: amount, per: '1', amount }],
  idempotency_key: null,
  request_hash: null,
  accepted_at: at,
});

test('free tasks settled before it get their charge of 0 in open months only, once', async () => {
  // Today's schema, with tasks settled as the functions before it settled them; then the migration's statement.
  const url = await freshDatabase();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`INSERT INTO project (id, name) VALUES ($1, 'free-tasks')`, [PROJECT]);
    const now = new Date();
    const thisMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1, 9)).toISOString();
    const lastMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 2, 9)).toISOString();
    const held = await client.query<{ task_id: string }>(
      `SELECT task_id::text FROM spendgate_place_holds($1::json) ORDER BY i`,
      [
        JSON.stringify([
          hold(0, '0', thisMonth), // free, settled: gets its charge of 0
          hold(1, '0', lastMonth), // free, settled, its month closed: sealed, stays
          hold(2, '0', thisMonth), // free, refused by the vendor: nothing
          hold(3, '0', thisMonth), // free, still in flight: nothing
          hold(4, '0.04', thisMonth), // held, released at a charge of 0 (failed): its release is its entry
        ]),
      ],
    );
    const [free, closed, refused, , failed] = held.rows.map((r) => r.task_id);
    // Settled as the functions before it did: no entry for a settlement without a hold or a charge.
    await client.query(
      `UPDATE task SET status = 'ready', settled_at = now(), charge_amount = 0 WHERE id = ANY($1::bigint[])`,
      [[free, closed]],
    );
    await client.query(`UPDATE task SET status = 'rejected', settled_at = now(), charge_amount = 0 WHERE id = $1`, [
      refused,
    ]);
    await client.query(
      `SELECT spendgate_settle($1, 'failed', 0, 'EXACT', NULL, '{}', false, NULL, '{}'::jsonb, '[]'::jsonb, '{}'::jsonb)`,
      [failed],
    );
    await client.query(
      `INSERT INTO month_close (month, closed_by, last_entry_id, carried_tasks)
       VALUES (date_trunc('month', $1::timestamptz AT TIME ZONE 'UTC')::date, 'test', 0, 0)`,
      [lastMonth],
    );
    const entries = async () =>
      (
        await client.query<{ task: string; kind: string; amount: string; at: string }>(
          `SELECT task_id::text AS task, kind::text, amount::text, effective_at AS at FROM ledger_entry
           WHERE kind IN ('charge', 'release') ORDER BY task_id, kind`,
        )
      ).rows.map((e) => ({ ...e, at: new Date(e.at).toISOString() }));
    const before = await entries();
    expect(before).toEqual([{ task: failed, kind: 'release', amount: '0.04', at: thisMonth }]);

    await client.query(readFileSync(MIGRATION, 'utf8'));
    const once = await entries();
    await client.query(readFileSync(MIGRATION, 'utf8'));
    expect(await entries()).toEqual(once);

    expect(once).toHaveLength(2);
    expect(once).toEqual(
      expect.arrayContaining([...before, { task: free, kind: 'charge', amount: '0', at: thisMonth }]),
    );
  } finally {
    await client.end();
  }
});
