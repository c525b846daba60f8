/**
 * A commitment's month reopened, its spend changed, and closed again (decisions §13 × §19): the
 * month's true-ups must add up to its shortfall as the last close finds it, so that what is owed is
 * the commitment or the spend, whichever is more. October's spend is 0.07 + 0.07 = 0.14 USD against a
 * 1 USD commitment: the first close trues up 0.86; a late credit of 0.05 raises the shortfall to
 * 0.91 (a second true-up of 0.05); a late charge of 1.50 takes the spend over the commitment, and the
 * third close takes the true-ups back (−0.91): nothing is owed beyond the spend.
 */
import { parse } from 'csv-parse/sync';
import type { Gateway } from '../../src/bootstrap.js';
import { Decimal } from '../../src/pricing/money.js';
import { acceptedTask, settleReady } from '../support/builders.js';
import { ADMIN, freshDatabase, gateway, graphql, http, projectWithKey, sql } from '../support/harness.js';

let gw: Gateway;
let platform: string;
const IMAGE = { model: 'seedream-4.0', prompt: 'a fox', resolution: '4K' };

const gql = async (query: string, variables?: Record<string, unknown>) =>
  (await graphql(gw, ADMIN, query, variables)).body;

const ok = async (query: string, variables?: Record<string, unknown>) => {
  const res = await gql(query, variables);
  expect(res.errors).toBeUndefined();
  return res.data;
};

const close = () => ok(`mutation { closeMonth(month: "2026-10") { month } }`);
const reopen = (reason: string) =>
  ok(`mutation($r: String!) { reopenMonth(month: "2026-10", reason: $r) }`, { r: reason });
/** A correction on the project with no task, dated in October (allowed while it is open). */
const lateMovement = (amount: string) =>
  ok(
    `mutation($p: ID!, $a: Decimal!) { adjustLedger(projectId: $p, unit: USD, amount: $a, reason: "late", effectiveAt: "2026-10-20T12:00:00Z") }`,
    { p: platform, a: amount },
  );

/** What the platform's October statement says it owes, and the commitment's October figures. */
async function owed() {
  const data = await ok(
    `query($p: ID!) {
       statement(projectId: $p, month: "2026-10") { totals { unit amount } }
       commitments { months(through: "2026-10") { used shortfall } }
     }`,
    { p: platform },
  );
  return { totals: data.statement.totals, month: data.commitments[0].months[0] };
}

const trueUps = async () =>
  (await sql(gw, `SELECT amount::text FROM commitment_true_up ORDER BY ledger_entry_id`)).map((r) => r.amount);

const lastCloseTrueUps = async () =>
  JSON.parse(
    String(
      (await sql(gw, `SELECT after FROM audit_record WHERE action = 'month.close' ORDER BY seq DESC LIMIT 1`))[0]!
        .after,
    ),
  ).trueUps;

beforeAll(async () => {
  gw = await gateway(await freshDatabase(), { POLLER_ENABLED: 'false', LEDGER_SEAL_MS: '0' });
  platform = (await projectWithKey(gw, 'platform')).projectId;
  for (const upstream of ['780001', '780002']) {
    await acceptedTask(gw, {
      projectId: platform,
      upstreamTaskId: upstream,
      body: IMAGE,
      acceptedAt: new Date(Date.UTC(2026, 9, 10, 12)),
    });
    expect(await settleReady(gw, platform, upstream)).toBe(true);
  }
  await ok(
    `mutation($p: ID!) { createCommitment(projectId: $p, name: "usd floor", unit: USD, amount: "1", startsMonth: "2026-10", endsMonth: "2026-10") { id } }`,
    { p: platform },
  );
});
afterAll(() => gw?.close());

test('a reopened month closed again trues up what its shortfall became: up after a late credit, back after a late charge', async () => {
  await close();
  expect(await owed()).toEqual({ totals: [{ unit: 'USD', amount: '1' }], month: { used: '0.14', shortfall: '0.86' } });
  expect(await trueUps()).toEqual(['0.86']);

  // A late credit: the spend falls to 0.09, the shortfall rises to 0.91; still 1 owed.
  await reopen('a late credit');
  await lateMovement('-0.05');
  await close();
  expect(await owed()).toEqual({ totals: [{ unit: 'USD', amount: '1' }], month: { used: '0.09', shortfall: '0.91' } });
  expect(await trueUps()).toEqual(['0.86', '0.05']);
  expect(await lastCloseTrueUps()).toEqual([{ commitment: 'usd floor', amount: '0.05' }]);

  // A late charge over the commitment: the spend is 1.59 and all of it is owed, nothing more.
  await reopen('a late charge');
  await lateMovement('1.5');
  await close();
  expect(await owed()).toEqual({ totals: [{ unit: 'USD', amount: '1.59' }], month: { used: '1.59', shortfall: '0' } });
  expect(await trueUps()).toEqual(['0.86', '0.05', '-0.91']);
  expect(await lastCloseTrueUps()).toEqual([{ commitment: 'usd floor', amount: '-0.91' }]);

  // Reopened and closed with nothing changed: nothing more is posted.
  await reopen('no change');
  await close();
  expect(await trueUps()).toEqual(['0.86', '0.05', '-0.91']);
  expect(await lastCloseTrueUps()).toEqual([]);
});

test('FOCUS over the month: EffectiveCost still adds up to BilledCost when the true-ups net to nothing', async () => {
  const csv = (
    await http(`${gw.url}/reports/focus.csv?from=2026-10-01T00:00:00Z&to=2026-11-01T00:00:00Z`, { key: ADMIN })
  ).text;
  const [header, ...rows] = parse(csv) as string[][];
  const sum = (name: string) => rows.reduce((s, r) => s.plus(r[header!.indexOf(name)]!), new Decimal(0)).toFixed();
  expect(sum('BilledCost')).toBe('1.59');
  expect(sum('EffectiveCost')).toBe('1.59');
  // The usage rows cost what they were billed: no true-up is left to spread over them.
  const usage = rows.filter((r) => r[header!.indexOf('ChargeCategory')] === 'Usage');
  expect(usage.map((r) => r[header!.indexOf('EffectiveCost')])).toEqual(
    usage.map((r) => r[header!.indexOf('BilledCost')]),
  );
});
