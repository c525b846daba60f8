/**
 * The credit price, FX rates and converted figures (decisions §19) through GraphQL and the CSV, by
 * hand from upstream-api.md's rates: October and November each with a glm-5.3 chat (1,000 input and
 * 1,000 output tokens: 1.4 + 4.9 = 6.3 credits) and a seedream-4.0 4K image (0.07 USD); credits at
 * 0.001 USD in October and 0.002 in November (two versions in one report), EUR at 0.9 per USD.
 */
import { parse } from 'csv-parse/sync';
import type { Gateway } from '../../src/bootstrap.js';
import { acceptedTask, settleReady } from '../support/builders.js';
import {
  ADMIN,
  freshDatabase,
  gateway,
  graphql,
  http,
  pollTask,
  projectWithKey,
  submitChat,
  submitGeneration,
} from '../support/harness.js';

let gw: Gateway;
let key: string;
let projectId: string;
const CHAT = { model: 'glm-5.3', messages: [{ role: 'user', content: 'hello' }], max_tokens: 100 };
const IMAGE = { model: 'seedream-4.0', prompt: 'a fox', resolution: '4K' };
const USAGE = { prompt_tokens: 1000, completion_tokens: 1000 };
const RANGE = { f: '2026-10-01T00:00:00Z', t: '2026-12-01T00:00:00Z' };
const REPORT = `query($f: DateTime!, $t: DateTime!, $c: String!) {
  convertedSpend(from: $f, to: $t, currency: $c, groupBy: ["month"]) {
    currency amount label missing creditPriceVersions fxRateVersions rows { keys unit amount converted } } }`;

beforeAll(async () => {
  gw = await gateway(await freshDatabase(), { SIMULATOR_DELAY_MS: '600000', POLLER_ENABLED: 'false' });
  ({ key, projectId } = await projectWithKey(gw));
  // October and November: accepted then (as a gateway that recorded them in those months), settled with the
  // vendor's usage. (The test's months are fixed; "now" was November when it was written.)
  for (const [month, chat, image] of [
    [9, '880001', '880002'],
    [10, '880003', '880004'],
  ] as const) {
    const at = new Date(Date.UTC(2026, month, 15, 12));
    await acceptedTask(gw, { projectId, upstreamTaskId: chat, body: CHAT, acceptedAt: at });
    await acceptedTask(gw, { projectId, upstreamTaskId: image, body: IMAGE, acceptedAt: at });
    for (const [upstream, usage] of [
      [chat, USAGE],
      [image, undefined],
    ] as const) {
      expect(await settleReady(gw, projectId, upstream, usage)).toBe(true);
    }
  }
  // Now (after November, outside RANGE): the same through the gateway, the dashboard's month to date.
  for (const [res, usage] of [
    [await submitChat(gw, key, CHAT), USAGE],
    [await submitGeneration(gw, key, IMAGE), undefined],
  ] as const) {
    const id = res.body.data.taskId;
    await http(`${gw.simulatorUrl}/__sim/tasks/${id}/complete`, {
      body: { status: 'ready', ...(usage ? { usage } : {}) },
    });
    await pollTask(gw, key, id);
  }
});
afterAll(() => gw.close());

const gql = async (query: string, variables?: Record<string, unknown>) =>
  (await graphql(gw, ADMIN, query, variables)).body;

test('finance sets the rates by month; a report converts each month at its own versions, beside the exact figures', async () => {
  for (const [month, price] of [
    ['2026-10', '0.001'],
    ['2026-11', '0.002'],
  ])
    expect(
      (await gql(`mutation { setCreditPrice(effectiveMonth: "${month}", usdPerCredit: "${price}") }`)).errors,
    ).toBeUndefined();
  expect(
    (
      await gql(
        `mutation { setFxRate(currency: "EUR", effectiveMonth: "2026-10", perUsd: "0.9", note: "Oct average") }`,
      )
    ).errors,
  ).toBeUndefined();

  const eur = (await gql(REPORT, { ...RANGE, c: 'EUR' })).data.convertedSpend;
  expect(eur.rows).toEqual([
    { keys: ['2026-10'], unit: 'CREDITS', amount: '6.3', converted: '0.00567' }, // 6.3 × 0.001 × 0.9
    { keys: ['2026-10'], unit: 'USD', amount: '0.07', converted: '0.063' },
    { keys: ['2026-11'], unit: 'CREDITS', amount: '6.3', converted: '0.01134' }, // 6.3 × 0.002 × 0.9
    { keys: ['2026-11'], unit: 'USD', amount: '0.07', converted: '0.063' },
  ]);
  expect(eur).toMatchObject({
    currency: 'EUR',
    amount: '0.14301',
    missing: [],
    creditPriceVersions: [1, 2],
    fxRateVersions: [1],
  });
  expect(eur.label).toBe(
    'converted to EUR at credit price v1 (0.001 USD a credit, from 2026-10), credit price v2 (0.002 USD a credit, from 2026-11), ' +
      'EUR v1 (0.9 per USD, from 2026-10); the exact figures per unit are the books',
  );
  // The dashboard's month to date (this month), converted beside its exact cards: 6.3 × 0.002 × 0.9 + 0.07 × 0.9.
  const dashboard = (
    await gql(
      `{ dashboard { monthToDate { unit amount } monthToDateConverted(currency: "EUR") { amount creditPriceVersions } } }`,
    )
  ).data.dashboard as unknown;
  expect(dashboard).toEqual({
    monthToDate: [
      { unit: 'CREDITS', amount: '6.3' },
      { unit: 'USD', amount: '0.07' },
    ],
    monthToDateConverted: { amount: '0.07434', creditPriceVersions: [2] },
  });
  // In USD no FX rate is needed; in GBP none is set: nothing is made up.
  expect((await gql(REPORT, { ...RANGE, c: 'USD' })).data.convertedSpend).toMatchObject({
    amount: '0.1589',
    fxRateVersions: [],
  });
  const gbp = (await gql(REPORT, { ...RANGE, c: 'GBP' })).data.convertedSpend;
  expect(gbp).toMatchObject({
    amount: null,
    missing: ['no GBP rate for 2026-10: not converted', 'no GBP rate for 2026-11: not converted'],
  });
  expect(gbp.rows.every((r: { converted: string | null; amount: string }) => r.converted === null && r.amount)).toBe(
    true,
  );

  const csv = parse(
    (
      await http(`${gw.url}/reports/converted.csv?from=${RANGE.f}&to=${RANGE.t}&groupBy=month&currency=EUR`, {
        key: ADMIN,
      })
    ).text,
    {
      relax_column_count: true,
    },
  ) as string[][];
  expect(csv[0]).toEqual(['month', 'unit', 'amount', 'tasks', 'converted_EUR']);
  expect(csv[1]).toEqual(['2026-10', 'CREDITS', '6.3', '1', '0.00567']);
  expect(csv[5]).toEqual(['', 'converted total', '', '', '0.14301']);
  expect(csv[6]![0]).toMatch(/^converted to EUR at credit price v1/);
});

test('a closed month keeps its rates: its statement converts at them, and no rate may start in it', async () => {
  expect((await gql(`mutation { closeMonth(month: "2026-10") { month } }`)).errors).toBeUndefined();
  for (const change of [
    `setCreditPrice(effectiveMonth: "2026-10", usdPerCredit: "0.005")`,
    `setFxRate(currency: "EUR", effectiveMonth: "2026-09", perUsd: "1.1")`,
  ]) {
    const res = await gql(`mutation { ${change} }`);
    expect(res.errors?.[0]).toMatchObject({
      message: expect.stringMatching(/2026-\d\d is closed \(through 2026-10\)/),
      extensions: { status: 409 },
    });
  }
  const statement = (
    await gql(
      `query($p: ID!) { statement(projectId: $p, month: "2026-10") { totals { unit amount }
      converted(currency: "EUR") { amount creditPriceVersions fxRateVersions label } } }`,
      { p: projectId },
    )
  ).data.statement;
  expect(statement.totals).toEqual([
    { unit: 'CREDITS', amount: '6.3' },
    { unit: 'USD', amount: '0.07' },
  ]);
  expect(statement.converted).toMatchObject({ amount: '0.06867', creditPriceVersions: [1], fxRateVersions: [1] });
  // A later version for November changes November's conversion, not October's.
  expect(
    (await gql(`mutation { setCreditPrice(effectiveMonth: "2026-11", usdPerCredit: "0.003") }`)).data.setCreditPrice,
  ).toBe(3);
  const again = (await gql(REPORT, { ...RANGE, c: 'USD' })).data.convertedSpend;
  expect(again).toMatchObject({ amount: '0.1652', creditPriceVersions: [1, 3] }); // 0.0063 + 0.07 + 0.0189 + 0.07
  expect(
    (await gql('{ conversionRates { version month rate publishedBy } }')).data.conversionRates.map(
      (r: { rate: string }) => r.rate,
    ),
  ).toEqual(['0.001', '0.002', '0.003']);
});

test('bad rates and currencies are 400s naming the field, and nothing is written', async () => {
  const refused: Array<[string, RegExp]> = [
    [
      `setCreditPrice(effectiveMonth: "2026-13", usdPerCredit: "0.001")`,
      /effectiveMonth: a month as YYYY-MM, e\.g\. 2026-10/,
    ],
    [`setCreditPrice(effectiveMonth: "2027-01", usdPerCredit: "0")`, /usdPerCredit: must be above zero/],
    [`setCreditPrice(effectiveMonth: "2027-01", usdPerCredit: "-1")`, /usdPerCredit: must not be negative/],
    [`setCreditPrice(effectiveMonth: "2047-01", usdPerCredit: "1")`, /within ten years/],
    [
      `setFxRate(currency: "eur", effectiveMonth: "2027-01", perUsd: "0.9")`,
      /currency: a currency is three capital letters/,
    ],
    [`setFxRate(currency: "USD", effectiveMonth: "2027-01", perUsd: "1")`, /USD needs no rate/],
  ];
  const before = (await gql('{ conversionRates { version } }')).data.conversionRates.length;
  for (const [change, message] of refused) {
    const res = await gql(`mutation { ${change} }`);
    expect(res.errors?.[0]).toMatchObject({
      message: expect.stringMatching(message),
      extensions: { code: 'BAD_USER_INPUT' },
    });
  }
  expect((await gql('{ conversionRates { version } }')).data.conversionRates.length).toBe(before);
  expect((await gql(REPORT, { ...RANGE, c: 'euro' })).errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  expect((await http(`${gw.url}/reports/converted.csv?from=${RANGE.f}&to=${RANGE.t}`, { key: ADMIN })).status).toBe(
    400,
  );
});
