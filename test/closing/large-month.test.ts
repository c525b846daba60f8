/**
 * A project's month larger than the process's memory still closes and verifies (decisions §13).
 * The statement's digest of the month's ledger used to read every entry at once: ~600 MB of heap a
 * million entries, so a project with ~7 million entries in a month (about a task a second) ended
 * the process that closed it. The digest is now read a page at a time (Database.eachPage): here
 * 300,000 entries are closed and verified by `spendgate` under a heap of 96 MB, in which reading
 * them at once runs out of memory; the digest is checked against the database's own computation
 * of it, across its 30 pages.
 */
import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { ENTRY_DIGEST_SQL } from '../../src/ledger/ledger-seal.js';
import { freshDatabase } from '../support/harness.js';

const ENTRIES = 300_000;
const HEAP_MB = 96;

let url: string;
let db: pg.Client;
let projectId: string;
const now = new Date();
const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1));
const label = monthStart.toISOString().slice(0, 7);

/** `spendgate …` in a process whose heap is bounded. */
function spendgate(args: string[]): { code: number | null; out: string } {
  const run = spawnSync(process.execPath, [`--max-old-space-size=${HEAP_MB}`, 'dist/src/cli/main.js', ...args], {
    env: { PATH: process.env.PATH, DATABASE_URL: url },
    encoding: 'utf8',
  });
  return { code: run.status, out: `${run.stdout}${run.stderr}` };
}

beforeAll(async () => {
  url = await freshDatabase();
  db = new pg.Client({ connectionString: url });
  await db.connect();
  projectId = (
    await db.query<{ id: string }>(
      `INSERT INTO project (id, name) VALUES (gen_random_uuid(), 'Großkunde') RETURNING id::text`,
    )
  ).rows[0]!.id;
  // A task's charge each, spread over the month (the tasks themselves are not needed by the digest).
  await db.query(
    `INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at)
     SELECT $1, g, 'charge', 'USD', 0.0125 + (g % 7) * 0.001, $2::timestamptz + g * interval '8 seconds'
     FROM generate_series(1, ${ENTRIES}) g`,
    [projectId, monthStart],
  );
}, 60_000);
afterAll(() => db.end());

test(`a month of ${ENTRIES.toLocaleString('en')} entries closes and verifies in a ${HEAP_MB} MB heap, its digest read a page at a time`, () => {
  const close = spendgate(['month', 'close', label]);
  expect(close).toEqual({
    code: 0,
    out: `closed ${label}: 1 statement(s), 0 open hold(s) carried to the next month\n`,
  });
  const verified = spendgate(['ledger', 'verify']);
  expect(verified.out).toContain('1 closed-month statements match the ledger');
  expect(verified.code).toBe(0);
}, 120_000);

test("the statement's digest is the database's own over every entry, in id order", async () => {
  const { rows } = await db.query<{ entries: number; same: boolean }>(
    `SELECT s.entries, s.ledger_digest = (SELECT sha256(string_agg(${ENTRY_DIGEST_SQL}, ''::bytea ORDER BY e.id))
       FROM ledger_entry e WHERE e.project_id = $1) AS same
     FROM statement s WHERE s.project_id = $1`,
    [projectId],
  );
  expect(rows).toEqual([{ entries: ENTRIES, same: true }]);
});
