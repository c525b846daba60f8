/**
 * Commitments (decisions §19) through GraphQL and the month's close, by hand: October's spend over
 * two projects is 0.07 + 0.07 + 0.07 = 0.21 USD (three seedream-4.0 4K images) and 6.3 credits (a
 * glm-5.3 chat of 1,000 + 1,000 tokens). A 1 USD commitment falls 0.79 short (trued up at the close,
 * in the statement, audited); a 5-credit one is exceeded by 1.3 (nothing to true up); a rollover
 * commitment carries October's unused amount into November.
 */
import { parse } from 'csv-parse/sync';
import type { Gateway } from '../../src/bootstrap.js';
import { Decimal } from '../../src/pricing/money.js';
import { acceptedTask, type Body, settleReady } from '../support/builders.js';
import { ADMIN, freshDatabase, gateway, graphql, http, projectWithKey, sql } from '../support/harness.js';

let gw: Gateway;
let platform: string;
let search: string;
const IMAGE = { model: 'seedream-4.0', prompt: 'a fox', resolution: '4K' };
const CHAT = { model: 'glm-5.3', messages: [{ role: 'user', content: 'hello' }], max_tokens: 100 };
const MONTHS = `{ commitments { name unit amount months(through: "2026-11") { month committed carriedIn used remaining overage shortfall } } }`;

const gql = async (query: string, variables?: Record<string, unknown>) =>
  (await graphql(gw, ADMIN, query, variables)).body;

async function spend(projectId: string, upstream: string, body: Body, usage?: object) {
  await acceptedTask(gw, {
    projectId,
    upstreamTaskId: upstream,
    body,
    acceptedAt: new Date(Date.UTC(2026, 9, 10, 12)),
  });
  expect(await settleReady(gw, projectId, upstream, usage)).toBe(true);
}

const commit = (args: string) =>
  gql(`mutation($p: ID!) { createCommitment(projectId: $p, ${args}) { id name } }`, { p: platform });

beforeAll(async () => {
  gw = await gateway(await freshDatabase(), { POLLER_ENABLED: 'false', LEDGER_SEAL_MS: '0' });
  platform = (await projectWithKey(gw, 'platform')).projectId;
  search = (await projectWithKey(gw, 'search')).projectId;
  await spend(platform, '770001', IMAGE);
  await spend(search, '770002', IMAGE);
  await spend(search, '770003', IMAGE);
  await spend(search, '770004', CHAT, { prompt_tokens: 1000, completion_tokens: 1000 });
});
afterAll(() => gw.close());

test('a shortfall is trued up when the month closes; an overage is not; both shown month by month', async () => {
  expect(
    (await commit(`name: "usd floor", unit: USD, amount: "1", startsMonth: "2026-10", endsMonth: "2026-10"`)).errors,
  ).toBeUndefined();
  expect(
    (await commit(`name: "credits", unit: CREDITS, amount: "5", startsMonth: "2026-10", endsMonth: "2026-10"`)).errors,
  ).toBeUndefined();
  const before = (await gql(MONTHS)).data.commitments;
  expect(before).toEqual([
    {
      name: 'credits',
      unit: 'CREDITS',
      amount: '5',
      months: [
        {
          month: '2026-10',
          committed: '5',
          carriedIn: '0',
          used: '6.3',
          remaining: '0',
          overage: '1.3',
          shortfall: '0',
        },
      ],
    },
    {
      name: 'usd floor',
      unit: 'USD',
      amount: '1',
      months: [
        {
          month: '2026-10',
          committed: '1',
          carriedIn: '0',
          used: '0.21',
          remaining: '0.79',
          overage: '0',
          shortfall: '0.79',
        },
      ],
    },
  ]);

  const closed = await gql(`mutation { closeMonth(month: "2026-10") { month } }`);
  expect(closed.errors).toBeUndefined();
  // The true-up is an adjustment on the platform project, the month's last entry, with its reason.
  const entries = await sql(
    gw,
    `SELECT project_id::text AS project, kind, unit::text, amount::text, effective_at, reason FROM ledger_entry WHERE task_id IS NULL`,
  );
  expect(entries).toEqual([
    {
      project: platform,
      kind: 'adjustment',
      unit: 'USD',
      amount: '0.79',
      effective_at: new Date('2026-10-31T23:59:59.999Z'),
      reason: 'true-up of commitment "usd floor" for 2026-10',
    },
  ]);
  const statement = (
    await gql(`query($p: ID!) { statement(projectId: $p, month: "2026-10") { totals { unit amount } } }`, {
      p: platform,
    })
  ).data.statement;
  expect(statement.totals).toEqual([{ unit: 'USD', amount: '0.86' }]); // 0.07 + 0.79
  // After the close the figures are the same: the true-up is not "used".
  expect((await gql(MONTHS)).data.commitments).toEqual(before);
  const audit = await sql(gw, `SELECT after FROM audit_record WHERE action = 'month.close' ORDER BY seq DESC LIMIT 1`);
  expect(JSON.parse(String(audit[0]!.after)).trueUps).toEqual([{ commitment: 'usd floor', amount: '0.79' }]);

  // Reopened and closed again: the true-up is not posted twice.
  expect((await gql(`mutation { reopenMonth(month: "2026-10", reason: "a late credit") }`)).errors).toBeUndefined();
  expect((await gql(`mutation { closeMonth(month: "2026-10") { month } }`)).errors).toBeUndefined();
  expect(await sql(gw, `SELECT count(*)::int AS n FROM ledger_entry WHERE task_id IS NULL`)).toEqual([{ n: 1 }]);
  expect(await sql(gw, `SELECT count(*)::int AS n FROM commitment_true_up`)).toEqual([{ n: 1 }]);
});

test('FOCUS: EffectiveCost spreads the true-up over the month’s usage by billed amount; BilledCost is what was billed', async () => {
  const csv = (
    await http(`${gw.url}/reports/focus.csv?from=2026-10-01T00:00:00Z&to=2026-11-01T00:00:00Z`, { key: ADMIN })
  ).text;
  const [header, ...rows] = parse(csv) as string[][];
  const col = (name: string) => header!.indexOf(name);
  const usd = rows
    .filter((r) => r[col('x_Unit')] === 'USD')
    .map((r) => [r[col('SubAccountName')], r[col('ChargeCategory')], r[col('BilledCost')], r[col('EffectiveCost')]]);
  // 0.79 × 0.07 / 0.21 = 0.2633333333 and 0.79 × 0.14 / 0.21 = 0.5266666667 (10 places, half-even): all of it spread
  expect(usd).toEqual([
    ['platform', 'Usage', '0.07', '0.3333333333'],
    ['search', 'Usage', '0.14', '0.6666666667'],
    ['platform', 'Adjustment', '0.79', '0'], // the true-up, on October 31
  ]);
  const sum = (i: number) => usd.reduce((t, r) => t.plus(r[i]!), new Decimal(0)).toFixed();
  expect([sum(2), sum(3)]).toEqual(['1', '1']);
});

test('with rollover, a month’s unused commitment is added to the next and trued up only in the last month', async () => {
  const made = await commit(
    `name: "rolling", unit: USD, amount: "0.5", startsMonth: "2026-11", endsMonth: "2026-12", rollover: true`,
  );
  expect(made.errors).toBeUndefined();
  const rolling = (await gql(MONTHS)).data.commitments.find((c: { name: string }) => c.name === 'rolling');
  // November has no spend yet: 0.5 unused, carried into December (not trued up in November).
  expect(rolling?.months).toEqual([
    { month: '2026-11', committed: '0.5', carriedIn: '0', used: '0', remaining: '0.5', overage: '0', shortfall: '0' },
  ]);
  const december = (
    await gql(`{ commitments { name months(through: "2026-12") { month committed carriedIn shortfall } } }`)
  ).data.commitments.find((c: { name: string }) => c.name === 'rolling');
  expect(december?.months[1]).toEqual({ month: '2026-12', committed: '1', carriedIn: '0.5', shortfall: '1' });
});

test('bad or overlapping commitments are refused with nothing written', async () => {
  const refused: Array<[string, RegExp]> = [
    [`name: "x", unit: USD, amount: "0", startsMonth: "2027-01"`, /amount: must be above zero/],
    [`name: "x", unit: USD, amount: "1", startsMonth: "2027-13"`, /startsMonth: a month as YYYY-MM, e\.g\. 2026-10/],
    [
      `name: "x", unit: USD, amount: "1", startsMonth: "2027-03", endsMonth: "2027-02"`,
      /endsMonth: must not be before/,
    ],
    [`name: "x", unit: USD, amount: "1", startsMonth: "2027-01", rollover: true`, /rollover needs its last month/],
    [`name: "x", unit: USD, amount: "1", startsMonth: "2026-10"`, /2026-10 is closed/],
    [`name: "x", unit: USD, amount: "1", startsMonth: "2026-12"`, /a USD commitment \("rolling"\) is in force/],
  ];
  for (const [args, message] of refused) {
    const res = await commit(args);
    expect(res.errors?.[0]?.message).toMatch(message);
  }
  expect(await sql(gw, `SELECT count(*)::int AS n FROM commitment`)).toEqual([{ n: 3 }]);
});
