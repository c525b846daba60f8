/**
 * Closing a month (decisions §13), on real PostgreSQL with two gateway instances:
 * October with 10,000 tasks, 300 still processing at its end; close it; settle the 300 (some
 * with overruns) on both instances, resolve 20 review items and make 5 adjustments of October's
 * tasks. October's spendReport (every grouping), CSV, FOCUS rows and statement stay byte-identical;
 * every late movement is a prior-period item of November naming its task; reconcile is clean.
 * Then a close racing 200 settlements, and the order and reopening rules.
 */
import type { Gateway } from '../../src/bootstrap.js';
import { LedgerService } from '../../src/ledger/ledger.service.js';
import { reconcile } from '../../src/ledger/reconcile.js';
import { canonicalDecimal } from '../../src/graphql/scalars.js';
import { Decimal } from '../../src/pricing/money.js';
import { heldTask } from '../support/builders.js';
import { ADMIN, freshDatabase, gateway, graphql, http, keyWithTags, projectWithKey, sql } from '../support/harness.js';

const OCT = { from: '2026-10-01T00:00:00Z', to: '2026-11-01T00:00:00Z' };
const GROUPINGS = [
  ['project'],
  ['model'],
  ['family'],
  ['kind'],
  ['day'],
  ['week'],
  ['month'],
  ['project', 'model', 'day'],
  ['apiKey'],
  ['user'],
  ['tag:team'],
];

/** A charge as the engine makes one for a seedream-4.0 image, or a larger one (an overrun). */
const charge = (amount: string) => ({
  unit: 'USD' as const,
  exactness: 'EXACT' as const,
  amount: new Decimal(amount),
  lines: [],
  warnings: [],
  needsReview: false,
});
const settle = (gw: Gateway, taskId: string, amount: string) =>
  gw.app
    .get(LedgerService)
    .settle({ taskId, status: 'ready', charge: charge(amount), usage: {}, rollup: { images: '1' } });

/** Everything October shows a reader: spendReport by every grouping, the CSV, the FOCUS export. */
async function octoberFigures(gw: Gateway): Promise<string[]> {
  const out: string[] = [];
  for (const groupBy of GROUPINGS) {
    const res = await graphql(
      gw,
      ADMIN,
      `query($g: [String!]) { spendReport(from: "${OCT.from}", to: "${OCT.to}", groupBy: $g) { keys totals { unit amount } tasks unpricedTasks } }`,
      { g: groupBy },
    );
    expect(res.body.errors).toBeUndefined();
    out.push(JSON.stringify(res.body.data));
  }
  out.push(
    (await http(`${gw.url}/reports/spend.csv?from=${OCT.from}&to=${OCT.to}&groupBy=project,model,day`, { key: ADMIN }))
      .text,
  );
  out.push((await http(`${gw.url}/reports/focus.csv?from=${OCT.from}&to=${OCT.to}`, { key: ADMIN })).text);
  return out;
}

describe('a month with 10,000 tasks, 300 open at its end', () => {
  let one: Gateway;
  let two: Gateway;
  let projects: Array<{ projectId: string; key: string }>;
  const open: string[] = [];
  const all: string[] = [];

  beforeAll(async () => {
    const url = await freshDatabase();
    one = await gateway(url, { POLLER_ENABLED: 'false', LEDGER_SEAL_MS: '0' });
    two = await gateway(url, { POLLER_ENABLED: 'false', LEDGER_SEAL_MS: '0' });
    projects = [await projectWithKey(one, 'search'), await projectWithKey(one, 'video')];
    for (const p of projects) {
      await graphql(
        one,
        ADMIN,
        `
          mutation ($p: ID!) {
            setBudget(projectId: $p, unit: USD, limit: "100000", period: MONTHLY, hard: true)
          }
        `,
        { p: p.projectId },
      );
      await graphql(
        one,
        ADMIN,
        `
          mutation ($p: ID!) {
            setBudget(projectId: $p, unit: USD, limit: "5000", period: DAILY, hard: false)
          }
        `,
        { p: p.projectId },
      );
    }
    await keyWithTags(one, projects[0]!.projectId, ['team=a']);
    // 10,000 October tasks over the month's days and hours, held on both instances.
    for (let chunk = 0; chunk < 20; chunk++) {
      const made = await Promise.all(
        Array.from({ length: 500 }, (_, i) => {
          const n = chunk * 500 + i;
          const at = new Date(Date.UTC(2026, 9, 1 + (n % 31), n % 24, n % 60));
          return heldTask(n % 2 ? two : one, { projectId: projects[n % 2]!.projectId, acceptedAt: at });
        }),
      );
      all.push(...made.map((t) => t.taskId));
    }
    // All but 300 settle in October (a few overruns, which are flagged for review).
    const settled = all.slice(0, 9_700);
    open.push(...all.slice(9_700));
    for (let i = 0; i < settled.length; i += 250) {
      await Promise.all(
        settled
          .slice(i, i + 250)
          .map((id, j) => settle((i + j) % 2 ? two : one, id, (i + j) % 997 === 0 ? '0.06' : '0.04')),
      );
    }
  }, 240_000);
  afterAll(async () => {
    await one?.close();
    await two?.close();
  });

  test('closed, then late settlements, resolutions and adjustments: October never changes, November receives prior-period items, reconcile is clean', async () => {
    const closed = await graphql(
      one,
      ADMIN,
      'mutation { closeMonth(month: "2026-10") { month carriedTasks statements closedBy } }',
    );
    expect(closed.body.data.closeMonth).toEqual({
      month: '2026-10',
      carriedTasks: 300,
      statements: 2,
      closedBy: 'ADMIN_TOKEN',
    });
    const atClose = await octoberFigures(one);
    const statementAt = await Promise.all(
      projects.map(async (p) => [
        (await http(`${one.url}/reports/statements/${p.projectId}/2026-10.csv`, { key: ADMIN })).text,
        Buffer.from(
          await (
            await fetch(`${one.url}/reports/statements/${p.projectId}/2026-10.pdf`, {
              headers: { authorization: `Bearer ${ADMIN}` },
            })
          ).arrayBuffer(),
        ).toString('base64'),
      ]),
    );
    // The statement: October's settled spend per unit, and the 300 open holds as an accrual.
    const statement = (
      await graphql(
        one,
        ADMIN,
        `
          query ($p: ID!) {
            statement(projectId: $p, month: "2026-10") {
              totals {
                unit
                amount
              }
              entries
              lines {
                section
              }
            }
          }
        `,
        { p: projects[0]!.projectId },
      )
    ).body.data.statement;
    expect(statement.lines.filter((l: { section: string }) => l.section === 'open at close')).toHaveLength(150);
    const [octSpend] = await sql(
      one,
      `SELECT sum(amount)::text AS s FROM ledger_entry WHERE project_id = $1 AND kind = 'charge' AND effective_at < '2026-11-01'`,
      [projects[0]!.projectId],
    );
    expect(statement.totals).toEqual([{ unit: 'USD', amount: canonicalDecimal(octSpend!.s as string) }]);

    // Late: the 300 settle on both instances (every 10th an overrun), 20 review items resolved, 5 adjustments.
    await Promise.all(open.map((id, i) => settle(i % 2 ? two : one, id, i % 10 === 0 ? '0.07' : '0.04')));
    const review = (
      await sql(one, `SELECT id::text FROM task WHERE needs_review AND resolved_at IS NULL ORDER BY id LIMIT 20`)
    ).map((r) => r.id as string);
    expect(review).toHaveLength(20);
    for (const [i, id] of review.entries()) {
      const res = await graphql(
        i % 2 ? two : one,
        ADMIN,
        `
          mutation ($t: ID!) {
            resolveTask(taskId: $t, outcome: CHARGE, amount: "0.05", reason: "agreed with the vendor") {
              status
            }
          }
        `,
        { t: `gw-${id}` },
      );
      expect(res.body.errors).toBeUndefined();
    }
    for (const id of all.slice(0, 5)) {
      const [t] = await sql(one, 'SELECT project_id::text AS p FROM task WHERE id = $1', [id]);
      const res = await graphql(
        two,
        ADMIN,
        `
          mutation ($p: ID!, $t: ID!) {
            adjustLedger(projectId: $p, unit: USD, amount: "-0.01", reason: "goodwill", taskId: $t)
          }
        `,
        { p: t!.p, t: `gw-${id}` },
      );
      expect(res.body.errors).toBeUndefined();
    }

    // October: identical, to the byte.
    expect(await octoberFigures(one)).toEqual(atClose);
    expect(await octoberFigures(two)).toEqual(atClose);
    for (const [i, p] of projects.entries()) {
      expect((await http(`${two.url}/reports/statements/${p.projectId}/2026-10.csv`, { key: ADMIN })).text).toBe(
        statementAt[i]![0],
      );
      expect(
        Buffer.from(
          await (
            await fetch(`${two.url}/reports/statements/${p.projectId}/2026-10.pdf`, {
              headers: { authorization: `Bearer ${ADMIN}` },
            })
          ).arrayBuffer(),
        ).toString('base64'),
      ).toBe(statementAt[i]![1]);
    }
    expect(
      (
        await sql(
          one,
          `SELECT count(*)::int AS n FROM ledger_entry WHERE effective_at < '2026-11-01' AND created_at > (SELECT closed_at FROM month_close)`,
        )
      )[0]!.n,
    ).toBe(0);

    // November: each late movement a prior-period item naming its task and October.
    const late = await sql(
      one,
      `SELECT task_id::text AS t, kind::text, effective_at, to_char(belongs_to, 'YYYY-MM') AS belongs FROM ledger_entry WHERE created_at > (SELECT closed_at FROM month_close) AND kind IN ('charge', 'adjustment')`,
    );
    expect(late.length).toBeGreaterThanOrEqual(300 + 5);
    for (const e of late)
      expect({ t: e.t, at: (e.effective_at as Date).toISOString(), belongs: e.belongs }).toEqual({
        t: e.t,
        at: '2026-11-01T00:00:00.000Z',
        belongs: '2026-10',
      });
    expect(new Set(late.filter((e) => e.kind === 'charge').map((e) => e.t))).toEqual(new Set(open));
    const nov = await graphql(
      one,
      ADMIN,
      `
        {
          spendReport(
            from: "2026-11-01T00:00:00Z"
            to: "2026-12-01T00:00:00Z"
            groupBy: ["project"]
            statuses: ["prior_period"]
          ) {
            totals {
              amount
            }
            tasks
          }
        }
      `,
    );
    const [lateSum] = await sql(
      one,
      `SELECT sum(amount)::text AS s FROM ledger_entry WHERE belongs_to = '2026-10-01' AND kind IN ('charge', 'adjustment')`,
    );
    const reported = nov.body.data.spendReport.reduce(
      (s: Decimal, r: { totals: Array<{ amount: string }> }) => s.plus(r.totals[0]!.amount),
      new Decimal(0),
    );
    expect(reported.toFixed()).toBe(new Decimal(lateSum!.s).toFixed());
    expect(await reconcile(one.db)).toEqual([]);
    // The close and its statements are in the audit trail.
    expect((await sql(one, `SELECT actor FROM audit_record WHERE action = 'month.close'`)).map((r) => r.actor)).toEqual(
      ['ADMIN_TOKEN'],
    );
  }, 240_000);
});

describe('closing rules', () => {
  let gw: Gateway;
  let projectId: string;
  beforeAll(async () => {
    gw = await gateway(await freshDatabase(), { POLLER_ENABLED: 'false', LEDGER_SEAL_MS: '0' });
    projectId = (await projectWithKey(gw)).projectId;
    for (const month of [8, 9]) await heldTask(gw, { projectId, acceptedAt: new Date(Date.UTC(2026, month, 10)) });
  });
  afterAll(() => gw.close());

  test('a month not over, out of order or closed twice is refused; an owner reopens the latest, with a reason (who may: test/auth/permissions.test.ts)', async () => {
    const close = async (month: string) =>
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
      ).body;
    expect((await close('2026-13')).errors?.[0]?.message).toMatch(/a month as YYYY-MM/);
    expect((await close('2099-01')).errors?.[0]?.message).toMatch(/not over yet/);
    expect((await close('2026-10')).errors?.[0]?.message).toMatch(/2026-09 is still open: months are closed in order/);
    expect((await close('2026-09')).data).toEqual({ closeMonth: { month: '2026-09' } });
    expect((await close('2026-09')).errors?.[0]?.message).toMatch(/already closed/);
    expect((await close('2026-10')).data).toEqual({ closeMonth: { month: '2026-10' } });
    const reopen = (month: string, reason: string) =>
      graphql(
        gw,
        ADMIN,
        `
          mutation ($m: String!, $r: String!) {
            reopenMonth(month: $m, reason: $r)
          }
        `,
        { m: month, r: reason },
      );
    expect((await reopen('2026-09', 'typo')).body.errors?.[0]?.message).toMatch(/2026-10 is closed after it/);
    expect((await reopen('2026-10', ' ')).body.errors?.[0]?.message).toMatch(/say why/);
    expect((await reopen('2026-10', 'a vendor credit arrived late')).body.data).toEqual({ reopenMonth: true });
    // Closed again: a second statement; the first is kept as version 1.
    expect((await close('2026-10')).data).toEqual({ closeMonth: { month: '2026-10' } });
    const s = (
      await graphql(
        gw,
        ADMIN,
        `
          query ($p: ID!) {
            statement(projectId: $p, month: "2026-10") {
              version
              earlierVersions
            }
          }
        `,
        { p: projectId },
      )
    ).body.data.statement;
    expect(s).toEqual({ version: 2, earlierVersions: [1] });
    expect((await http(`${gw.url}/reports/statements/${projectId}/2026-10.csv?version=1`, { key: ADMIN })).status).toBe(
      200,
    );
    const months = (await graphql(gw, ADMIN, '{ closedMonths { month reopenedAt reopenReason } }')).body.data
      .closedMonths as Array<{ month: string; reopenReason: string | null }>;
    expect(months.map((m) => [m.month, m.reopenReason])).toEqual([
      ['2026-10', null],
      ['2026-10', 'a vendor credit arrived late'],
      ['2026-09', null],
    ]);
    // The database itself refuses an entry inside a closed month, whatever path writes it.
    await expect(
      sql(
        gw,
        `INSERT INTO ledger_entry (project_id, kind, unit, amount, effective_at, reason) VALUES ($1, 'adjustment', 'USD', 1, '2026-09-15', 'sneaky')`,
        [projectId],
      ),
    ).rejects.toThrow(/the month 2026-09 is closed/);
    await expect(sql(gw, `UPDATE month_close SET closed_by = 'someone else'`)).rejects.toThrow(/kept as written/);
  });
});

test('a close racing 200 settlements on two instances: each lands before the close (in October) or after it (a prior-period item), once', async () => {
  const url = await freshDatabase();
  const one = await gateway(url, { POLLER_ENABLED: 'false', LEDGER_SEAL_MS: '0' });
  const two = await gateway(url, { POLLER_ENABLED: 'false', LEDGER_SEAL_MS: '0' });
  try {
    const { projectId } = await projectWithKey(one);
    const tasks = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        heldTask(one, { projectId, acceptedAt: new Date(Date.UTC(2026, 9, 31, 23, 59, 0, i)) }),
      ),
    );
    const settling = tasks.map((t, i) =>
      new Promise((r) => setTimeout(r, i % 50)).then(() => settle(i % 2 ? two : one, t.taskId, '0.04')),
    );
    const closing = new Promise((r) => setTimeout(r, 20)).then(() =>
      graphql(two, ADMIN, 'mutation { closeMonth(month: "2026-10") { carriedTasks } }'),
    );
    const [results, closed] = await Promise.all([Promise.all(settling), closing]);
    expect(results.every((r) => r.settled)).toBe(true);
    const carried = closed.body.data.closeMonth.carriedTasks as number;
    const charges = await sql(
      one,
      `SELECT task_id::text AS t, effective_at < '2026-11-01' AS october, belongs_to IS NOT NULL AS prior FROM ledger_entry WHERE kind = 'charge'`,
    );
    expect(charges).toHaveLength(200);
    expect(new Set(charges.map((c) => c.t)).size).toBe(200);
    const inOctober = charges.filter((c) => c.october && !c.prior).length;
    const prior = charges.filter((c) => !c.october && c.prior).length;
    expect(inOctober + prior).toBe(200);
    expect(prior).toBe(carried); // exactly the holds open at close settled later
    const statement = (
      await graphql(
        one,
        ADMIN,
        `
          query ($p: ID!) {
            statement(projectId: $p, month: "2026-10") {
              totals {
                amount
              }
              lines {
                section
              }
            }
          }
        `,
        { p: projectId },
      )
    ).body.data.statement;
    expect(statement.lines.filter((l: { section: string }) => l.section === 'open at close')).toHaveLength(carried);
    expect(new Decimal(statement.totals[0]?.amount ?? '0').eq(new Decimal('0.04').times(inOctober))).toBe(true);
    expect(await reconcile(one.db)).toEqual([]);
    console.log(`close racing 200 settlements: ${inOctober} in October, ${prior} prior-period items in November`);
  } finally {
    await one.close();
    await two.close();
  }
}, 120_000);
