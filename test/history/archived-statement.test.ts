/**
 * A vendor statement that touches an archived month (decisions §14 × §18). The month's tasks are in
 * its files, so matching would read our tasks as billed but not ours (with our figure 0) and leave out
 * the tasks the vendor did not bill. The import is refused with a 409 naming the month and the way
 * back, and nothing is written. Restored, the same statement matches task by task.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Gateway } from '../../src/bootstrap.js';
import { Database } from '../../src/database/database.js';
import { lockArchivedMonths } from '../../src/tasks/archived-tasks.js';
import { LedgerSealer } from '../../src/ledger/ledger-sealer.js';
import { acceptedTask, settleAsImage } from '../support/builders.js';
import { spendgate } from '../support/cli.js';
import { ADMIN, eventually, freshDatabase, gateway, graphql, projectWithKey, sql } from '../support/harness.js';
import { accept, postStatement } from '../support/statements.js';

const ARCHIVE_DIR = mkdtempSync(path.join(tmpdir(), 'spendgate-archive-'));
const HEADER = 'task_id,model,time,amount,unit\n';
// Our three October tasks 920000–920002 (the 5th, 6th and 7th) cost 0.04 each: the vendor bills the
// first right, the third 0.01 more, and leaves the second out.
const OCTOBER = `${HEADER}920000,seedream-4.0,2026-10-05T00:00:00Z,0.04,USD\n920002,seedream-4.0,2026-10-07T00:00:00Z,0.05,USD\n`;

let url: string;
let gw: Gateway;

const cli = (...args: string[]) => spendgate({ DATABASE_URL: url, ARCHIVE_DIR }, ...args);

const written = async () =>
  (
    await sql(
      gw,
      `SELECT (SELECT count(*) FROM vendor_statement)::int AS statements, (SELECT count(*) FROM vendor_statement_line)::int AS lines,
              (SELECT count(*) FROM vendor_recon_item)::int AS items`,
    )
  )[0];

beforeAll(async () => {
  url = await freshDatabase();
  gw = await gateway(url, { POLLER_ENABLED: 'false', LEDGER_SEAL_MS: '0', ARCHIVE_DIR });
  const { projectId } = await projectWithKey(gw, 'billed');
  for (let i = 0; i < 3; i++) {
    const held = await acceptedTask(gw, {
      projectId,
      upstreamTaskId: String(920_000 + i),
      acceptedAt: new Date(Date.UTC(2026, 9, 5 + i)),
    });
    const settled = await settleAsImage(gw, held.taskId);
    expect(settled.settled).toBe(true);
  }
  expect((await graphql(gw, ADMIN, 'mutation { closeMonth(month: "2026-10") { month } }')).body.errors).toBeUndefined();
  await new LedgerSealer(gw.db).sealAll();
  expect(await cli('archive', '2026-10')).toMatchObject({
    code: 0,
    out: expect.stringMatching(/^archived 2026-10: 3 tasks/),
  });
}, 120_000);
afterAll(async () => gw?.close());

test('a statement billing tasks of an archived month is refused with the way back; nothing is written', async () => {
  const refused = await postStatement(gw, OCTOBER);
  expect([refused.status, refused.body]).toEqual([
    409,
    {
      code: 4090,
      message:
        'statement: it bills task 920000, accepted in 2026-10, which is archived: restore it (`spendgate archive restore 2026-10`), import the statement, then archive it again',
    },
  ]);
  // Billed in November, for a task of October: the same.
  const late = await postStatement(gw, `${HEADER}920001,seedream-4.0,2026-11-03T00:00:00Z,0.05,USD\n`);
  expect([late.status, late.body.message]).toEqual([409, expect.stringContaining('task 920001, accepted in 2026-10')]);
  // Days of October with no task of ours named: the tasks it left out would not be listed.
  const days = await postStatement(
    gw,
    `${HEADER}7,seedream-4.0,2026-10-30T00:00:00Z,0.04,USD\n8,seedream-4.0,2026-11-02T00:00:00Z,0.04,USD\n`,
  );
  expect([days.status, days.body.message]).toEqual([
    409,
    "statement: its days (2026-10-30 to 2026-11-02) hold 2026-10, which is archived: the tasks it may have left out are in that month's files; restore it (`spendgate archive restore 2026-10`), import the statement, then archive it again",
  ]);
  expect(await written()).toEqual({ statements: 0, lines: 0, items: 0 });

  // A statement of November alone is imported as ever.
  const november = await postStatement(gw, `${HEADER}9,seedream-4.0,2026-11-02T00:00:00Z,0.04,USD\n`);
  expect([november.status, november.body.classes]).toEqual([
    201,
    [{ class: 'billed_not_ours', unit: 'USD', count: 1, theirs: '0.04', ours: '0' }],
  ]);
});

test('restored, the same statement matches task by task: one matched, one differs by 0.01, one not billed', async () => {
  expect(await cli('archive', 'restore', '2026-10')).toMatchObject({ code: 0 });
  const imported = await postStatement(gw, OCTOBER);
  expect(imported.status).toBe(201);
  expect(imported.body.classes).toEqual([
    { class: 'amount_differs', unit: 'USD', count: 1, theirs: '0.05', ours: '0.04' },
    { class: 'matched', unit: 'USD', count: 1, theirs: '0.04', ours: '0.04' },
    { class: 'ours_not_billed', unit: 'USD', count: 1, theirs: '0', ours: '0.04' },
  ]);
});

test('archived again, the tasks awaiting a person stay in the database: their differences are decided as ever', async () => {
  // 920001 is named by an open "ours, not billed", 920002 is under review with its "amount differs".
  expect(await cli('archive', '2026-10')).toMatchObject({
    code: 0,
    out: expect.stringMatching(/^archived 2026-10: 3 tasks, \d+ ledger entries, 2 kept in the database/),
  });
  const review = await graphql(gw, ADMIN, '{ tasks(filter: { needsReview: true }) { edges { node { taskId } } } }');
  expect(review.body.data.tasks.edges).toEqual([{ node: { taskId: '920002' } }]);
  const items = await sql<{ id: string; class: string }>(
    gw,
    `SELECT id::text, class FROM vendor_recon_item WHERE state = 'open' AND task_id IS NOT NULL ORDER BY class`,
  );
  expect(items.map((i) => i.class)).toEqual(['amount_differs', 'ours_not_billed']);
  const taken = await accept(gw, items[0]!.id);
  expect(taken.body).toEqual({ data: { acceptVendorDifference: { state: 'accepted' } } });
  // The vendor's 0.01 more: a prior-period item of the first open month.
  expect(
    await sql(
      gw,
      `SELECT amount::text, to_char(effective_at, 'YYYY-MM') AS month FROM ledger_entry WHERE kind = 'adjustment'`,
    ),
  ).toEqual([{ amount: '0.01', month: '2026-11' }]);
});

test('an item whose task an earlier archive took is refused with the way back, and no money moves', async () => {
  // As an archive made before tasks awaiting a person were kept could leave it: 920000 is archived.
  const [item] = await sql<{ id: string; task_id: string }>(
    gw,
    `INSERT INTO vendor_recon_item (statement_id, class, vendor_task_id, task_id, project_id, unit, ours, theirs, difference)
     SELECT statement_id, 'amount_differs', u.upstream_task_id, u.task_id, u.project_id, 'USD', 0.04, 0.06, 0.02
     FROM vendor_recon_item, task_upstream u WHERE u.upstream_task_id = 920000 LIMIT 1
     RETURNING id::text, task_id::text`,
  );
  const entries = async () => (await sql(gw, 'SELECT count(*)::int AS n FROM ledger_entry'))[0]!.n;
  const before = await entries();
  const refused = await accept(gw, item!.id);
  expect(refused.body.errors?.[0]).toMatchObject({
    message: `its task gw-${item!.task_id} was accepted in 2026-10, which is archived: restore it (\`spendgate archive restore 2026-10\`), decide, then archive it again`,
    extensions: { code: 'CONFLICT', status: 409 },
  });
  expect(await entries()).toBe(before);
});

test('resolving or adjusting a task of an archived month says it is archived, by either of its ids', async () => {
  const [t] = await sql<{ task_id: string; project_id: string }>(
    gw,
    'SELECT task_id::text, project_id::text FROM task_upstream WHERE upstream_task_id = 920000',
  );
  const archived = (id: string) =>
    `task ${id} was accepted in 2026-10, which is archived: \`spendgate archive restore 2026-10\` brings it back`;
  for (const id of ['920000', `gw-${t!.task_id}`]) {
    const resolved = await graphql(
      gw,
      ADMIN,
      'mutation($id: ID!) { resolveTask(taskId: $id, outcome: RELEASE, reason: "late") { taskId } }',
      { id },
    );
    expect(resolved.body.errors?.[0]).toMatchObject({ message: archived(id), extensions: { code: 'NOT_FOUND' } });
  }
  const adjusted = await graphql(
    gw,
    ADMIN,
    'mutation($id: ID!, $p: ID!) { adjustLedger(projectId: $p, unit: USD, amount: "0.01", reason: "late", taskId: $id) }',
    { id: '920000', p: t!.project_id },
  );
  expect(adjusted.body.errors?.[0]).toMatchObject({ message: archived('920000'), extensions: { code: 'NOT_FOUND' } });
  expect(await sql(gw, `SELECT count(*)::int AS n FROM ledger_entry WHERE kind = 'adjustment'`)).toEqual([{ n: 1 }]);
});

test('an import waits while a month is being archived or restored, so it never matches half a month', async () => {
  const db = new Database(url, 1);
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let locked!: () => void;
  const isLocked = new Promise<void>((resolve) => (locked = resolve));
  // What archive and restore hold from their first statement to their commit.
  const archiving = db.inTransaction(async () => {
    await lockArchivedMonths(db, 'exclusive');
    locked();
    await released;
  });
  await isLocked;
  let answered = false;
  const imported = postStatement(gw, `${HEADER}11,seedream-4.0,2026-11-04T00:00:00Z,0.04,USD\n`).then((r) => {
    answered = true;
    return r;
  });
  // The import is queued behind the archive's lock, not answered.
  await eventually(
    async () =>
      (await sql(gw, `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`))[0]!.n ===
      1,
  );
  expect(answered).toBe(false);
  release();
  await archiving;
  expect((await imported).status).toBe(201);
  await db.close();
});
