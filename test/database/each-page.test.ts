/**
 * Database.eachPage: every row of a query a page at a time through a cursor (a month's digest of
 * millions of ledger entries in bounded memory, decisions §13), planned for all of its rows, and
 * leaving nothing behind on the pooled connection whether it ends or fails.
 */
import { Database } from '../../src/database/database.js';
import { freshDatabase } from '../support/harness.js';

let db: Database;
const NUMBERS = 'SELECT s.n::text FROM generate_series(1, $1::int) AS s(n) ORDER BY s.n';

beforeAll(async () => {
  db = new Database(await freshDatabase(), 1);
});
afterAll(() => db.pool.end());

test('gives every row once, in order, a page at a time, and answers how many', async () => {
  const pages: string[][] = [];
  const count = await db.eachPage(NUMBERS, [25], (rows) => void pages.push(rows.map((r) => r[0] as string)), 10);
  expect(count).toBe(25);
  expect(pages.map((p) => p.length)).toEqual([10, 10, 5]);
  expect(pages.flat()).toEqual(Array.from({ length: 25 }, (_, i) => String(i + 1)));
  expect(await db.eachPage(NUMBERS, [0], () => Promise.reject(new Error('no page expected')))).toBe(0);
});

test('plans the cursor for all of its rows, only inside its own transaction', async () => {
  const fraction = async () =>
    (await db.query<{ f: string }>(`SELECT current_setting('cursor_tuple_fraction') AS f`)).rows[0]!.f;
  const seen: string[] = [];
  // The pool has one connection: the query in onPage runs in eachPage's transaction (it joins it).
  await db.eachPage(NUMBERS, [3], async () => void seen.push(await fraction()), 2);
  expect(seen).toEqual(['1', '1']);
  // At the default (0.1) a project's month was read through the month's whole key index: 2× slower.
  expect(await fraction()).toBe('0.1');
});

test('a page that fails rolls the cursor back with its transaction; the connection reads on', async () => {
  const failing = db.eachPage(NUMBERS, [5], () => Promise.reject(new Error('page refused')), 2);
  await expect(failing).rejects.toThrow('page refused');
  expect(await db.eachPage(NUMBERS, [5], () => undefined, 2)).toBe(5);
  const open = await db.query<{ n: string }>('SELECT count(*)::text AS n FROM pg_cursors');
  expect(open.rows[0]!.n).toBe('0');
});
