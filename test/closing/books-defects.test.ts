/**
 * The books (decisions §13, §14) could be made wrong from outside, where features meet. One regression test
 * per finding, through the real HTTP and GraphQL edges, over two instances where two were involved.
 * Vendor statements (items 1-5), dates (6, 10), the ledger's anchor (7), one rule for a bar and
 * its drill-down (8), the audit chain's microseconds and a mailto endpoint (11), one HTTP status
 * per GraphQL error (14).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Gateway } from '../../src/bootstrap.js';
import fc from 'fast-check';
import { canonicalDecimal } from '../../src/graphql/scalars.js';
import { LedgerService } from '../../src/ledger/ledger.service.js';
import { monthDigest } from '../../src/closing/statement-data.js';
import { LedgerSealer } from '../../src/ledger/ledger-sealer.js';
import { reconcile } from '../../src/ledger/reconcile.js';
import { Decimal } from '../../src/pricing/money.js';
import { acceptedTask, heldTask } from '../support/builders.js';
import { ADMIN, freshDatabase, gateway, graphql, http, projectWithKey, sql } from '../support/harness.js';
import { accept, charge, items, postStatement, settledTask, statement, task } from '../support/statements.js';

const run = promisify(execFile);
describe('vendor statements against the ledger (two instances)', () => {
  let a: Gateway;
  let b: Gateway;
  let projectId: string;
  beforeAll(async () => {
    const url = await freshDatabase();
    a = await gateway(url, { POLLER_ENABLED: 'false', LEDGER_SEAL_MS: '0', EARLY_WARNING_MS: '0' });
    b = await gateway(url, { POLLER_ENABLED: 'false', LEDGER_SEAL_MS: '0', EARLY_WARNING_MS: '0' });
    projectId = (await projectWithKey(a, 'statements')).projectId;
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
  });

  test("item 1: a mapping's scale cannot carry an amount past the bounds; nothing is stored; reconcile names any stored amount outside them", async () => {
    await settledTask(a, projectId, 4_100_001);
    const csv = statement([[4_100_001, '2026-11-02T10:00:00Z', '0.04']]);
    const tiny = await postStatement(a, csv, [{ field: 'amount', column: 'amount', scale: '0.000000000000000001' }]);
    expect(tiny.status).toBe(400);
    expect(tiny.body.message).toMatch(
      /^statement: line 2, column "amount": .*at most 12 digits before the point and 18 after, also once scaled by 0\.000000000000000001/,
    );
    const huge = await postStatement(a, statement([[4_100_001, '2026-11-02T10:00:00Z', '999999999999']]), [
      { field: 'amount', column: 'amount', scale: '999999999999' },
    ]);
    expect(huge.status).toBe(400);
    expect(await sql(a, 'SELECT count(*)::int AS n FROM vendor_statement')).toEqual([{ n: 0 }]);
    expect(await reconcile(a.db)).toEqual([]);
    // What an older gateway let in (on a database of its own: the ledger keeps it forever): a 1e24
    // adjustment and a line of 1e-36. reconcile no longer says clean.
    const old = await gateway(await freshDatabase(), {
      POLLER_ENABLED: 'false',
      LEDGER_SEAL_MS: '0',
      EARLY_WARNING_MS: '0',
    });
    try {
      const p = (await projectWithKey(old, 'older')).projectId;
      await sql(
        old,
        `SELECT spendgate_adjust($1, 'USD', 999999999998000000000001, 'from a scaled statement', NULL, now())`,
        [p],
      );
      await sql(
        old,
        `INSERT INTO vendor_statement (id, imported_by, file_digest, rows, repeated, summary) VALUES (gen_random_uuid(), 'older', '\\x00', 1, 0, '{}')`,
      );
      await sql(
        old,
        `INSERT INTO vendor_statement_line (statement_id, line_no, vendor_task_id, billed_at, unit, amount) SELECT id, 2, 1, now(), 'USD', 0.000000000000000000000000000000000001 FROM vendor_statement`,
      );
      const found = (await reconcile(old.db)).map((d) => [
        d.what.replace(/[0-9a-f-]{36}/, 'S').replace(/^ledger entry \d+/, 'ledger entry N'),
        d.stored,
      ]);
      expect(found).toEqual(
        expect.arrayContaining([
          [
            'ledger entry N (adjustment): an amount outside the bounds (12 digits before the point, 18 after)',
            '999999999998000000000001',
          ],
          [
            'vendor statement S line 2: an amount outside the bounds (12 digits before the point, 18 after)',
            '0.000000000000000000000000000000000001',
          ],
        ]),
      );
    } finally {
      await old.close();
    }
  });

  test('item 2: a task an earlier statement billed is billed again, a review item, never matched twice', async () => {
    await settledTask(a, projectId, 4_200_001);
    const first = await postStatement(a, statement([[4_200_001, '2026-11-02T10:00:00Z', '0.04']]));
    expect(first.status).toBe(201);
    expect(await items(a, first.body.id)).toEqual([]); // matched
    const second = await postStatement(b, statement([[4_200_001, '2026-11-03T10:00:00Z', '0.04']]));
    expect(second.status).toBe(201);
    expect(await items(b, second.body.id)).toEqual([
      expect.objectContaining({
        class: 'billed_again',
        vendorTaskId: '4200001',
        ours: '0.04',
        theirs: '0.04',
        state: 'open',
      }),
    ]);
    expect((await task(a, 4_200_001)).needsReview).toBe(true);
  });

  test('an open "ours, not billed" does not keep a task under review once its differing figure is taken (found by the money model, decisions §16)', async () => {
    const today = new Date().toISOString().slice(0, 10);
    await settledTask(a, projectId, 4_700_001);
    await settledTask(a, projectId, 4_700_002);
    // The first statement bills only the other task: 4700001 is ours, not billed (finance's item, not a review).
    const one = await postStatement(a, statement([[4_700_002, `${today}T00:10:00Z`, '0.04']]));
    expect((await items(a, one.body.id)).filter((i) => i.vendorTaskId === '4700001').map((i) => i.class)).toEqual([
      'ours_not_billed',
    ]);
    expect((await task(a, 4_700_001)).needsReview).toBe(false);
    const two = await postStatement(b, statement([[4_700_001, `${today}T00:11:00Z`, '0.05']]));
    const [differs] = (await items(b, two.body.id)).filter((i) => i.vendorTaskId === '4700001');
    expect(differs!.class).toBe('amount_differs');
    expect((await task(a, 4_700_001)).needsReview).toBe(true);
    expect((await accept(b, differs!.id)).body.data).toEqual({ acceptVendorDifference: { state: 'accepted' } });
    // Before: still under review, for the open "ours, not billed" that never put it there.
    expect(await task(a, 4_700_001)).toMatchObject({ net: '0.05', needsReview: false });
  });

  test("item 3: accepting brings the net to the vendor's figure, whatever happened in between; a resolution that settles an item closes it", async () => {
    await settledTask(a, projectId, 4_300_001);
    const one = await postStatement(a, statement([[4_300_001, '2026-11-04T10:00:00Z', '0.05']]));
    const two = await postStatement(b, statement([[4_300_001, '2026-11-05T10:00:00Z', '0.05']]));
    const [x] = await items(a, one.body.id);
    const [y] = await items(a, two.body.id);
    expect([x!.class, y!.class]).toEqual(['amount_differs', 'billed_again']);
    expect((await accept(a, x!.id)).body.data).toEqual({ acceptVendorDifference: { state: 'accepted' } });
    expect((await accept(b, y!.id)).body.data).toEqual({ acceptVendorDifference: { state: 'accepted' } });
    expect(await task(a, 4_300_001)).toMatchObject({ net: '0.05', adjustments: '0.01', needsReview: false });

    // Resolved to the vendor's figure first: the item is closed by the resolution, not posted again.
    await settledTask(a, projectId, 4_300_002, '0.48');
    const three = await postStatement(a, statement([[4_300_002, '2026-11-06T10:00:00Z', '0.5']]));
    const [z] = await items(a, three.body.id);
    const resolved = await graphql(
      b,
      ADMIN,
      `
        mutation {
          resolveTask(taskId: "4300002", outcome: CHARGE, amount: "0.50", reason: "vendor ticket 12") {
            net
            needsReview
          }
        }
      `,
    );
    expect(resolved.body.data.resolveTask).toEqual({ net: '0.5', needsReview: false });
    expect((await items(a, three.body.id))[0]).toMatchObject({ id: z!.id, state: 'accepted' });
    const again = await accept(a, z!.id);
    expect(again.body.errors?.[0]).toMatchObject({
      message: `difference ${z!.id} was already accepted`,
      extensions: { status: 409 },
    });
    expect(await task(a, 4_300_002)).toMatchObject({ net: '0.5', adjustments: '0.02' });
    expect(await reconcile(a.db)).toEqual([]);
  });

  test('item 4: the same file on two instances at once is one statement; two files sharing rows hold them once; never a 5xx', async () => {
    for (let i = 0; i < 20; i++) await settledTask(a, projectId, 4_400_000 + i);
    const same = statement(
      Array.from(
        { length: 20 },
        (_, i) => [4_400_000 + i, '2026-11-07T10:00:00Z', '0.041'] as [number, string, string],
      ),
    );
    const both = await Promise.all([postStatement(a, same), postStatement(b, same)]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 201]);
    expect(both[0]!.body.id).toBe(both[1]!.body.id);
    // Two files: 4 rows of their own each, 16 shared.
    const shared: Array<[number, string, string]> = Array.from({ length: 16 }, (_, i) => [
      4_400_000 + i,
      '2026-11-08T10:00:00Z',
      '0.042',
    ]);
    const left = statement([
      ...shared,
      ...Array.from(
        { length: 4 },
        (_, i) => [4_400_016 + i, '2026-11-08T11:00:00Z', '0.042'] as [number, string, string],
      ),
    ]);
    const right = statement([
      ...shared,
      ...Array.from(
        { length: 4 },
        (_, i) => [4_400_016 + i, '2026-11-08T12:00:00Z', '0.043'] as [number, string, string],
      ),
    ]);
    const two = await Promise.all([postStatement(a, left), postStatement(b, right)]);
    expect(two.map((r) => r.status)).toEqual([201, 201]);
    expect(two.map((r) => r.body.repeated).sort()).toEqual([0, 16]);
    const held = await sql(
      a,
      `SELECT vendor_task_id::text AS id, count(*)::int AS n FROM vendor_statement_line l JOIN vendor_statement s ON s.id = l.statement_id
      WHERE s.id = ANY($1::uuid[]) AND l.billed_at = '2026-11-08T10:00:00Z' GROUP BY 1 HAVING count(*) > 1`,
      [two.map((r) => r.body.id)],
    );
    expect(held).toEqual([]);
  });

  test('item 5: a pending item can be taken once its task is resolved; the task stays under review while it is open', async () => {
    await acceptedTask(a, { projectId, upstreamTaskId: '4500001' }); // held 0.04, in flight
    const s = await postStatement(a, statement([[4_500_001, '2026-11-09T10:00:00Z', '0.05']]));
    const [item] = await items(a, s.body.id);
    expect(item).toMatchObject({ class: 'pending', state: 'open' });
    const still = await accept(a, item!.id);
    expect(still.body.errors?.[0]?.message).toMatch(/its task is still held/);
    const resolved = await graphql(
      b,
      ADMIN,
      `
        mutation {
          resolveTask(taskId: "4500001", outcome: CHARGE, reason: "the hold, until the statement is taken") {
            net
            needsReview
          }
        }
      `,
    );
    expect(resolved.body.data.resolveTask).toEqual({ net: '0.04', needsReview: true }); // the open item still names it
    expect((await accept(b, item!.id)).body.data).toEqual({ acceptVendorDifference: { state: 'accepted' } });
    expect(await task(a, 4_500_001)).toMatchObject({ net: '0.05', needsReview: false });
    expect(await reconcile(a.db)).toEqual([]);
  });
});

describe('dates that enter (items 6 and 10)', () => {
  let gw: Gateway;
  let projectId: string;
  let url: string;
  beforeAll(async () => {
    url = await freshDatabase();
    gw = await gateway(url, { POLLER_ENABLED: 'false', LEDGER_SEAL_MS: '0', EARLY_WARNING_MS: '0' });
    projectId = (await projectWithKey(gw, 'dates')).projectId;
  });
  afterAll(() => gw.close());

  test('item 6: an adjustment dated before the first month of activity is refused; a database that has one closes through it with --through', async () => {
    const adjust = (at: string) =>
      graphql(
        gw,
        ADMIN,
        `
          mutation ($p: ID!, $at: DateTime) {
            adjustLedger(projectId: $p, unit: USD, amount: "1.25", reason: "typo", effectiveAt: $at)
          }
        `,
        { p: projectId, at },
      );
    const old = await adjust('1970-01-01T00:00:00Z');
    expect(old.status).toBe(200);
    expect(old.body.errors?.[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', status: 400 } });
    expect(old.body.errors?.[0]?.message).toMatch(
      /^effectiveAt: 1970-01-01T00:00:00\.000Z is before the gateway's first month of activity \(\d{4}-\d{2}\)/,
    );
    expect(await sql(gw, `SELECT count(*)::int AS n FROM ledger_entry WHERE kind = 'adjustment'`)).toEqual([{ n: 0 }]);
    expect((await adjust(new Date(Date.now() - 60_000).toISOString())).body.errors).toBeUndefined();

    // A database from before the rule: one entry of 1970 stands before every close.
    await sql(gw, `SELECT spendgate_adjust($1, 'USD', 1, 'from before the rule', NULL, '1970-01-01T00:00:00Z')`, [
      projectId,
    ]);
    const now = new Date();
    const last = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)).toISOString().slice(0, 7);
    const refused = await graphql(
      gw,
      ADMIN,
      `
        mutation ($m: String!) {
          closeMonth(month: $m) {
            month
          }
        }
      `,
      { m: last },
    );
    expect(refused.body.errors?.[0]?.message).toMatch(/close 1970-01 first/);
    const cli = await run(process.execPath, ['dist/src/cli/main.js', 'month', 'close', '--through', last], {
      env: { ...process.env, DATABASE_URL: url },
    });
    expect(cli.stdout).toMatch(/^closed 1970-01: 1 statement\(s\)/);
    expect(cli.stdout).toMatch(new RegExp(`^closed \\d+ month\\(s\\) with no activity, 1970-02 to ${last}$`, 'm'));
    const next = await graphql(
      gw,
      ADMIN,
      `
        {
          monthToClose
          closedMonths {
            month
          }
        }
      `,
    );
    expect(next.body.data.monthToClose).toBeNull();
    expect((next.body.data.closedMonths as Array<{ month: string }>)[0]!.month).toBe(last);
  }, 120_000);

  test('item 10: impossible dates are refused everywhere they enter, never rolled over', async () => {
    for (const bad of ['2026-11-31T10:00:00Z', '2026-02-29T00:00:00Z', '2026-11-30T24:00:00Z', '2026-02-30']) {
      const res = await graphql(
        gw,
        ADMIN,
        `
          query ($f: DateTime!) {
            spendReport(from: $f, to: "2026-12-01T00:00:00Z") {
              tasks
            }
          }
        `,
        { f: bad },
      );
      expect(res.status).toBe(400);
      expect(res.body.errors?.[0]).toMatchObject({
        message: expect.stringContaining(`"${bad}" is not a real date-time`),
        extensions: { code: 'BAD_USER_INPUT', status: 400 },
      });
    }
    const csv = await http(`${gw.url}/reports/spend.csv?from=2026-02-30T00:00:00Z&to=2026-03-01T00:00:00Z`, {
      key: ADMIN,
    });
    expect(csv.status).toBe(400);
    expect(csv.body).toMatchObject({
      code: 4000,
      message:
        'from: "2026-02-30T00:00:00Z" is not a real date-time (ISO 8601 in years 0001–9999 UTC, e.g. 2026-11-30 or 2026-11-30T10:00:00Z)',
    });
    const cli = await run(
      process.execPath,
      ['dist/src/cli/main.js', 'report', '--from', '2026-02-30', '--to', '2026-03-01'],
      { env: { ...process.env, DATABASE_URL: url } },
    ).catch((e: { code: number; stderr: string }) => e);
    expect(cli).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--from: "2026-02-30" is not a real date-time'),
    });
    const stmt = await postStatement(gw, 'task_id,model,time,amount,unit\n5000001,seedream-4.0,2026-02-31,0.04,USD\n');
    expect(stmt).toMatchObject({
      status: 400,
      body: { message: expect.stringMatching(/^statement: line 2, column "time": "2026-02-31" is not a time/) },
    });
    // A real leap day is a date.
    expect(
      (
        await graphql(
          gw,
          ADMIN,
          `
            {
              spendReport(from: "2028-02-29T00:00:00Z", to: "2028-03-01T00:00:00Z") {
                tasks
              }
            }
          `,
        )
      ).body.errors,
    ).toBeUndefined();
  });
});

describe("the ledger's anchor outside the database (item 7)", () => {
  test('ledger head; verify --head names a deleted newest seal and a recomputed chain; statements carry the head, the audit record too', async () => {
    const url = await freshDatabase();
    const gw = await gateway(url, { POLLER_ENABLED: 'false', LEDGER_SEAL_MS: '0', EARLY_WARNING_MS: '0' });
    const env = { ...process.env, DATABASE_URL: url };
    const cli = (...args: string[]) =>
      run(process.execPath, ['dist/src/cli/main.js', ...args], { env }).then(
        (r) => ({ code: 0, out: r.stdout }),
        (e: { code: number; stdout: string }) => ({ code: e.code, out: e.stdout }),
      );
    try {
      const { projectId } = await projectWithKey(gw, 'anchor');
      const now = new Date();
      const lastMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 3));
      for (let i = 0; i < 3; i++) await settledTask(gw, projectId, 7_000_001 + i, '0.04', lastMonth);
      await new LedgerSealer(gw.db).sealAll();
      const head = (await cli('ledger', 'head')).out.trim();
      expect(head).toMatch(/^\d+ [0-9a-f]{64}$/);
      const hash = head.split(' ')[1]!;
      expect(await cli('ledger', 'verify', '--head', hash)).toMatchObject({
        code: 0,
        out: expect.stringContaining('the kept head is in the chain'),
      });

      // Closing prints the head on each statement and keeps it in the audit record.
      const label = lastMonth.toISOString().slice(0, 7);
      expect(
        (
          await graphql(
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
          )
        ).body.errors,
      ).toBeUndefined();
      const csv = await http(`${gw.url}/reports/statements/${projectId}/${label}.csv`, { key: ADMIN });
      expect(csv.text).toContain(`statement,ledger head at close,seal ${head.replace(' ', ' ')},,,`);
      const audit = await sql(gw, `SELECT after FROM audit_record WHERE action = 'month.close'`);
      expect(JSON.parse(audit[0]!.after as string)).toMatchObject({
        ledgerHead: { seal: head.split(' ')[0], sealHash: hash },
      });

      // A superuser deletes the newest seal: without the head verify cannot see it; with it, it can.
      await sql(
        gw,
        `BEGIN; SET LOCAL session_replication_role = replica; DELETE FROM ledger_seal WHERE seq = (SELECT max(seq) FROM ledger_seal); COMMIT;`,
      );
      expect((await cli('ledger', 'verify')).code).toBe(0);
      const caught = await cli('ledger', 'verify', '--head', hash);
      expect(caught).toMatchObject({
        code: 1,
        out: expect.stringContaining(
          `ledger verify: FAILED: the kept head ${hash} is not in the ledger's chain of seals`,
        ),
      });

      // Or edits a sealed charge and recomputes everything with the published algorithm: every seal
      // again, and the closed month's statement digest. Verify alone passes; the kept head does not.
      await sql(
        gw,
        `BEGIN; SET LOCAL session_replication_role = replica;
        UPDATE ledger_entry SET amount = 0.01 WHERE id = (SELECT min(id) FROM ledger_entry WHERE kind = 'charge');
        DELETE FROM ledger_seal; DELETE FROM ledger_seal_mark; COMMIT;`,
      );
      await new LedgerSealer(gw.db).sealAll();
      const month = {
        label,
        start: new Date(`${label}-01T00:00:00Z`),
        end: new Date(Date.UTC(lastMonth.getUTCFullYear(), lastMonth.getUTCMonth() + 1, 1)),
        day: `${label}-01`,
      };
      const redone = await monthDigest(gw.db, projectId, month);
      await sql(
        gw,
        `BEGIN; SET LOCAL session_replication_role = replica; UPDATE statement SET ledger_digest = $1, entries = $2; COMMIT;`
          .replace(/\$1/, `'\\x${redone.digest.toString('hex')}'`)
          .replace(/\$2/, String(redone.entries)),
      );
      expect(await cli('ledger', 'verify')).toMatchObject({ code: 0 });
      expect(await cli('ledger', 'verify', '--head', hash)).toMatchObject({
        code: 1,
        out: expect.stringContaining("is not in the ledger's chain of seals"),
      });
    } finally {
      await gw.close();
    }
  }, 120_000);
});

describe('one rule for a bar and its drill-down (item 8)', () => {
  test("a model's total with an adjustment, and a closed month's day after a late charge: taskTotals over the posted range equals the spendReport row", async () => {
    const gw = await gateway(await freshDatabase(), {
      POLLER_ENABLED: 'false',
      LEDGER_SEAL_MS: '0',
      EARLY_WARNING_MS: '0',
    });
    try {
      const { projectId } = await projectWithKey(gw, 'drill');
      const now = new Date();
      const day = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 10, 12));
      const dayRange = {
        f: new Date(Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), 10)).toISOString(),
        t: new Date(Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), 11)).toISOString(),
      };
      for (let i = 0; i < 4; i++) await settledTask(gw, projectId, 8_000_001 + i, '0.04', day);
      const late = await heldTask(gw, { projectId, acceptedAt: day }); // still held at the close
      const adjusted = await graphql(
        gw,
        ADMIN,
        `
          mutation ($p: ID!) {
            adjustLedger(projectId: $p, unit: USD, amount: "0.02", reason: "a correction", taskId: "8000001")
          }
        `,
        { p: projectId },
      );
      expect(adjusted.body.errors).toBeUndefined();
      const bar = async (range: { f: string; t: string }) =>
        (
          await graphql(
            gw,
            ADMIN,
            `
              query ($f: DateTime!, $t: DateTime!) {
                spendReport(from: $f, to: $t, groupBy: ["model"], unit: USD) {
                  keys
                  tasks
                  totals {
                    amount
                  }
                }
              }
            `,
            range,
          )
        ).body.data.spendReport as Array<{ keys: string[]; tasks: number; totals: { amount: string }[] }>;
      const drill = async (range: { f: string; t: string }) =>
        (
          await graphql(
            gw,
            ADMIN,
            `
              query ($f: DateTime!, $t: DateTime!) {
                taskTotals(filter: { models: ["seedream-4.0"], postedFrom: $f, postedTo: $t }) {
                  tasks
                  totals {
                    unit
                    amount
                  }
                }
              }
            `,
            range,
          )
        ).body.data.taskTotals;
      const before = await bar(dayRange);
      expect(before).toEqual([{ keys: ['seedream-4.0'], tasks: 4, totals: [{ amount: '0.18' }] }]); // 4 × 0.04 + 0.02
      expect(await drill(dayRange)).toEqual({ tasks: 4, totals: [{ unit: 'USD', amount: '0.18' }] });

      // The month closes with one task still held; it is charged late: a prior-period item of this month.
      const month = day.toISOString().slice(0, 7);
      expect(
        (
          await graphql(
            gw,
            ADMIN,
            `
              mutation ($m: String!) {
                closeMonth(month: $m) {
                  month
                }
              }
            `,
            { m: month },
          )
        ).body.errors,
      ).toBeUndefined();
      await gw.app
        .get(LedgerService)
        .settle({ taskId: late.taskId, status: 'ready', charge: charge('0.04'), usage: {}, rollup: { images: '1' } });
      expect(await bar(dayRange)).toEqual(before);
      expect(await drill(dayRange)).toEqual({ tasks: 4, totals: [{ unit: 'USD', amount: '0.18' }] });
      const thisMonth = {
        f: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
        t: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
      };
      expect(await bar(thisMonth)).toEqual([{ keys: ['seedream-4.0'], tasks: 1, totals: [{ amount: '0.04' }] }]);
      expect(await drill(thisMonth)).toEqual({ tasks: 1, totals: [{ unit: 'USD', amount: '0.04' }] });
      const bad = await graphql(
        gw,
        ADMIN,
        `
          {
            taskTotals(filter: { postedFrom: "2026-11-01T00:00:00Z" }) {
              tasks
            }
          }
        `,
      );
      expect(bad.body.errors?.[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT' } });
    } finally {
      await gw.close();
    }
  }, 60_000);
});

describe('one way to write an exact decimal (item 8d)', () => {
  test('canonicalDecimal writes what decimal.js writes, for any decimal text', () => {
    const text = fc
      .tuple(fc.boolean(), fc.bigInt({ min: 0n, max: 10n ** 15n }), fc.nat(8), fc.nat(4))
      .map(([neg, digits, scale, zeros]) => {
        const s = digits.toString().padStart(scale + 1, '0');
        return `${neg ? '-' : ''}${scale ? `${s.slice(0, -scale)}.${s.slice(-scale)}` : s}${scale && zeros ? '0'.repeat(zeros) : ''}`;
      });
    fc.assert(
      fc.property(text, (t) => expect(canonicalDecimal(t)).toBe(new Decimal(t).toFixed())),
      { numRuns: 3000 },
    );
    expect(['0.60', '100', '12.000', '-0.00', '0.000000000000000001'].map(canonicalDecimal)).toEqual([
      '0.6',
      '100',
      '12',
      '0',
      '0.000000000000000001',
    ]);
  });

  test('the dashboard and budgetStatus say "0.1" for the same 0.04 + 0.06, never "0.10" beside "0.1"', async () => {
    const gw = await gateway(await freshDatabase(), {
      POLLER_ENABLED: 'false',
      LEDGER_SEAL_MS: '0',
      EARLY_WARNING_MS: '0',
    });
    try {
      const { projectId } = await projectWithKey(gw, 'decimals');
      expect(
        (
          await graphql(
            gw,
            ADMIN,
            `
              mutation ($p: ID!) {
                setBudget(projectId: $p, unit: USD, limit: "1.50", period: MONTHLY, hard: true)
              }
            `,
            { p: projectId },
          )
        ).body.errors,
      ).toBeUndefined();
      await settledTask(gw, projectId, 8_400_001, '0.04');
      await settledTask(gw, projectId, 8_400_002, '0.06');
      const seen = await graphql(
        gw,
        ADMIN,
        `
          query ($p: ID!) {
            dashboard {
              monthToDate {
                unit
                amount
              }
            }
            budgetStatus(projectId: $p) {
              limit
              spent
              held
            }
          }
        `,
        { p: projectId },
      );
      expect(seen.body.data).toEqual({
        dashboard: { monthToDate: [{ unit: 'USD', amount: '0.1' }] },
        budgetStatus: [{ limit: '1.5', spent: '0.1', held: '0' }],
      });
      // The database keeps the sum's scale; the answer does not.
      expect(await sql(gw, `SELECT spent::text FROM budget_period`)).toEqual([{ spent: '0.10' }]);
    } finally {
      await gw.close();
    }
  });
});

describe('smaller (item 11) and one status per GraphQL error (item 14)', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await gateway(await freshDatabase(), { POLLER_ENABLED: 'false', LEDGER_SEAL_MS: '0', EARLY_WARNING_MS: '0' });
  });
  afterAll(() => gw.close());

  test('the audit chain sees an edit of 400 µs', async () => {
    await projectWithKey(gw, 'audited');
    expect(
      (
        await graphql(
          gw,
          ADMIN,
          `
            mutation {
              createProject(name: "audited-2")
            }
          `,
        )
      ).body.errors,
    ).toBeUndefined();
    const verify = () =>
      run(process.execPath, ['dist/src/cli/main.js', 'audit', 'verify'], {
        env: { ...process.env, DATABASE_URL: gw.databaseUrl },
      }).then(
        (r) => r.stdout,
        (e: { stdout: string }) => e.stdout,
      );
    expect(await verify()).toMatch(/^audit verify: \d+ records chain/);
    await sql(
      gw,
      `BEGIN; SET LOCAL session_replication_role = replica; UPDATE audit_record SET at = at + interval '400 microseconds' WHERE seq = 1; COMMIT;`,
    );
    expect(await verify()).toMatch(/^audit verify: FAILED at record 1:/);
  });

  test('"an image route", not "a image route"', async () => {
    const { key } = await projectWithKey(gw, 'routes');
    const res = await http(`${gw.url}/api-platform/v1/chat/completions`, {
      key,
      body: { model: 'seedream-4.0', messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/"seedream-4\.0" is an image route; submit it to \/api-platform\/v1\/generations/);
  });

  test('a mailto endpoint shows its domain to a reader who may not manage it', async () => {
    const made = await graphql(
      gw,
      ADMIN,
      `
        mutation {
          createWebhookEndpoint(url: "mailto:finance@example.com", format: EMAIL) {
            endpoint {
              id
            }
          }
        }
      `,
    );
    expect(made.body.errors).toBeUndefined();
    const account = await graphql(
      gw,
      ADMIN,
      `
        mutation {
          createServiceAccount(name: "books", role: FINANCE) {
            id
          }
        }
      `,
    );
    const id = (account.body.data.createServiceAccount as { id: string }).id;
    const token = await graphql(
      gw,
      ADMIN,
      `
        mutation ($s: ID!) {
          createToken(name: "books", serviceAccountId: $s) {
            secret
          }
        }
      `,
      { s: id },
    );
    const secret = (token.body.data.createToken as { secret: string }).secret;
    const seen = await graphql(
      gw,
      secret,
      `
        {
          webhookEndpoints {
            url
          }
        }
      `,
    );
    expect(seen.body.data.webhookEndpoints).toEqual([{ url: 'mailto:…@example.com' }]);
  });

  test('every GraphQL error carries extensions { code, status }, and one HTTP status per error however often it is sent', async () => {
    const document = `query($f: DateTime!) { spendReport(from: $f, to: "2026-12-01T00:00:00Z") { tasks } }`;
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await graphql(gw, ADMIN, document, { f: 'not a date' })).status);
    expect(statuses).toEqual([400, 400, 400, 400]);
    const syntax = await graphql(gw, ADMIN, '{ spendReport(');
    expect(syntax).toMatchObject({
      status: 400,
      body: { errors: [{ extensions: { code: 'GRAPHQL_PARSE_FAILED', status: 400 } }] },
    });
    const invalid = await graphql(gw, ADMIN, '{ nothingHere }');
    expect(invalid).toMatchObject({
      status: 400,
      body: { errors: [{ extensions: { code: 'GRAPHQL_VALIDATION_FAILED', status: 400 } }] },
    });
    const noType = await fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}` },
      body: '{ projects { id } }',
    });
    expect(noType.status).toBe(400);
    expect(await noType.json()).toMatchObject({
      errors: [{ message: expect.stringMatching(/^no query: send a JSON body/), extensions: { status: 400 } }],
    });
  });
});

describe('item 12: the embedded PostgreSQL under a private folder, as root', () => {
  (process.getuid?.() === 0 ? test : test.skip)('one clear line and exit 78, not an initdb stack trace', async () => {
    const home = mkdtempSync(path.join(os.tmpdir(), 'spendgate-private-')); // mode 0700, owned by root
    writeFileSync(path.join(home, 'note'), 'a private folder\n');
    const started = await run(process.execPath, [path.resolve('dist/src/main.js')], {
      cwd: home,
      env: { PATH: process.env.PATH, HOME: home, PORT: '0', NODE_ENV: 'test' },
      timeout: 60_000,
    }).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    );
    expect(started.code).toBe(78);
    expect(started.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        new RegExp(
          `^spendgate: DATA_DIR ${home}/\\.data: the embedded PostgreSQL runs as the user postgres \\(it refuses root\\), which cannot enter ${home} \\(mode 0700\\): .*chmod o\\+x ${home}`,
        ),
      ),
    ]);
  });
});
