/**
 * Reports by who (decisions §7), through GraphQL, the CSV, the CLI and the FOCUS export:
 * spend grouped by API key, end user and tag (with a `(none)` group) agrees with the ledger to the
 * last decimal, per unit; filters pick the same tasks the ledger does; combinations the roll-up
 * cannot answer are refused with a 400 that says why; focus.csv follows the FOCUS 1.2 column rules.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Gateway } from '../../src/bootstrap.js';
import { FOCUS_COLUMNS } from '../../src/reports/focus-export.js';
import { dec, type Decimal } from '../../src/pricing/money.js';
import { imageBody } from '../support/builders.js';
import {
  ADMIN,
  freshDatabase,
  gateway,
  graphql,
  http,
  keyWithTags,
  pollTask,
  projectWithKey,
  sql,
  submitChat,
  submitGeneration,
} from '../support/harness.js';

let url: string;
let gw: Gateway;
let projectId: string;
let ml: string; // a key with default tag team=ml
let plain: string; // a key without tags
const now = new Date();
const today = new Date(now.toISOString().slice(0, 10) + 'T00:00:00Z');
const tomorrow = new Date(today.getTime() + 86_400_000);
const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
const monthEnd = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
const CHAT = { model: 'gemini-3.8-flash', messages: [{ role: 'user', content: 'hi' }] };
const CHAT_USAGE = {
  promptTokenCount: 20_000,
  cachedContentTokenCount: 8_000,
  candidatesTokenCount: 1_500,
  thoughtsTokenCount: 2_500,
}; // 31.9956 credits

const who = (user?: string, tags?: string) => ({
  ...(user ? { 'x-spendgate-user': user } : {}),
  ...(tags ? { 'x-spendgate-tags': tags } : {}),
});

async function settle(key: string, taskId: number, status: 'ready' | 'failed', usage?: unknown) {
  await http(`${gw.simulatorUrl}/__sim/tasks/${taskId}/complete`, {
    body: usage === undefined ? { status } : { status, usage },
  });
  expect((await pollTask(gw, key, taskId)).body.data.status).toBe(status);
}

beforeAll(async () => {
  url = await freshDatabase();
  gw = await gateway(url, { SIMULATOR_DELAY_MS: '600000', POLLER_ENABLED: 'false' });
  ({ projectId, key: plain } = await projectWithKey(gw, 'acme'));
  ml = await keyWithTags(gw, projectId, ['team=ml']);
  const image = (key: string, headers: Record<string, string>) =>
    submitGeneration(gw, key, imageBody({ n: 3 }), headers); // 0.12 USD
  const tasks: Array<[string, Promise<{ body: { data: { taskId: number } } }>, 'ready' | 'failed', unknown?]> = [
    [ml, image(ml, who('alice', 'feature=search')), 'ready'],
    [ml, image(ml, who('bob')), 'ready'],
    [ml, submitChat(gw, ml, CHAT, who('alice', 'feature=chat')), 'ready', CHAT_USAGE],
    [plain, image(plain, who('alice', 'feature=search')), 'ready'],
    [plain, image(plain, who('carol, jr.')), 'ready'], // a user with a comma
    [plain, image(plain, {}), 'failed'],
    [plain, submitChat(gw, plain, CHAT, {}), 'ready', CHAT_USAGE],
  ];
  for (const [key, submitted, status, usage] of tasks)
    await settle(key, (await submitted).body.data.taskId, status, usage);
  // A correction without a task: in no key's, user's or tag's group but (none).
  const adjusted = await graphql(
    gw,
    ADMIN,
    `
      mutation ($p: ID!) {
        adjustLedger(projectId: $p, unit: USD, amount: "-0.0125", reason: "goodwill")
      }
    `,
    { p: projectId },
  );
  expect(adjusted.body.errors).toBeUndefined();
});
afterAll(() => gw.close());

type Totals = Record<string, string>;

/** What the ledger says was spent (charges and adjustments), per unit, for the tasks a condition picks. */
async function ledger(where = 'true', values: unknown[] = []): Promise<Totals> {
  const rows = await sql<{ unit: string; amount: string }>(
    gw,
    `SELECT le.unit::text AS unit, sum(le.amount)::text AS amount FROM ledger_entry le LEFT JOIN task t ON t.id = le.task_id
     LEFT JOIN api_key k ON k.id = t.api_key_id
     WHERE le.kind IN ('charge', 'adjustment') AND (${where}) GROUP BY le.unit`,
    values,
  );
  return Object.fromEntries(rows.map((r) => [r.unit, dec(r.amount).toFixed()]));
}

interface ReportRow {
  keys: string[];
  totals: Array<{ unit: string; amount: string }>;
  tasks: number;
}
async function report(vars: Record<string, unknown>, month = false): Promise<ReportRow[]> {
  const res = await graphql<{ spendReport: ReportRow[] }>(
    gw,
    ADMIN,
    `
      query (
        $from: DateTime!
        $to: DateTime!
        $g: [String!]
        $k: [String!]
        $u: [String!]
        $t: [String!]
        $unit: Unit
        $o: SpendOrder
        $n: Int
      ) {
        spendReport(
          from: $from
          to: $to
          groupBy: $g
          apiKeys: $k
          users: $u
          tags: $t
          unit: $unit
          orderBy: $o
          first: $n
        ) {
          keys
          totals {
            unit
            amount
          }
          tasks
        }
      }
    `,
    { from: (month ? monthStart : today).toISOString(), to: (month ? monthEnd : tomorrow).toISOString(), ...vars },
  );
  expect(res.body.errors).toBeUndefined();
  return res.body.data.spendReport;
}

/** Per group, per unit, as exact decimal strings. */
const byGroup = (rows: ReportRow[]) => {
  const out: Record<string, Totals> = {};
  for (const row of rows)
    for (const t of row.totals) (out[row.keys.join('|')] ??= {})[t.unit] = dec(t.amount).toFixed();
  return out;
};
const sumOf = (rows: ReportRow[]): Totals => {
  const sums: Record<string, Decimal> = {};
  for (const row of rows) for (const t of row.totals) sums[t.unit] = (sums[t.unit] ?? dec(0)).plus(dec(t.amount));
  return Object.fromEntries(Object.entries(sums).map(([u, d]) => [u, d.toFixed()]));
};

describe('spendReport by who agrees with the ledger to the last decimal', () => {
  test('by API key: each key, and (none) for the correction; the groups add up to the whole', async () => {
    const rows = await report({ g: ['apiKey'] });
    const mlPrefix = ml.slice(3, 15);
    const plainPrefix = plain.slice(3, 15);
    expect(byGroup(rows)).toEqual({
      [mlPrefix]: await ledger('k.prefix = $1', [mlPrefix]),
      [plainPrefix]: await ledger('k.prefix = $1', [plainPrefix]),
      '(none)': await ledger('le.task_id IS NULL'),
    });
    expect(byGroup(rows)[mlPrefix]).toEqual({ USD: '0.24', CREDITS: '31.9956' });
    expect(sumOf(rows)).toEqual(await ledger());
    expect(rows.find((r) => r.keys[0] === plainPrefix)!.tasks).toBe(4); // the failed one counts, at 0
  });

  test('by user (a month): alice, bob, "carol, jr." and (none); month-aligned ranges only', async () => {
    const rows = await report({ g: ['user'] }, true);
    expect(byGroup(rows)).toEqual({
      alice: await ledger(`t.end_user = 'alice'`),
      bob: await ledger(`t.end_user = 'bob'`),
      'carol, jr.': await ledger(`t.end_user = 'carol, jr.'`),
      '(none)': await ledger('t.end_user IS NULL'),
    });
    expect(byGroup(rows).alice).toEqual({ USD: '0.24', CREDITS: '31.9956' });
    expect(sumOf(rows)).toEqual(await ledger());
  });

  test('by tag: the values of one tag name, and (none) for tasks without it', async () => {
    const feature = await report({ g: ['tag:feature'] });
    expect(byGroup(feature)).toEqual({
      search: await ledger(`'feature=search' = ANY(t.tags)`),
      chat: await ledger(`'feature=chat' = ANY(t.tags)`),
      '(none)': await ledger(`t.id IS NULL OR NOT EXISTS (SELECT 1 FROM unnest(t.tags) x WHERE x LIKE 'feature=%')`),
    });
    expect(sumOf(feature)).toEqual(await ledger());
    // The key's default tag counts as the task's own.
    const team = byGroup(await report({ g: ['tag:team'] }));
    expect(team.ml).toEqual(await ledger(`k.prefix = $1`, [ml.slice(3, 15)]));
    expect(team['(none)']).toEqual(await ledger(`k.prefix IS DISTINCT FROM $1`, [ml.slice(3, 15)]));
  });

  test('filters pick the same tasks the ledger does, with other groupings', async () => {
    expect(sumOf(await report({ g: ['project'], u: ['alice'] }, true))).toEqual(await ledger(`t.end_user = 'alice'`));
    expect(sumOf(await report({ g: ['day'], t: ['team=ml'] }))).toEqual(
      await ledger('k.prefix = $1', [ml.slice(3, 15)]),
    );
    expect(sumOf(await report({ g: ['project'], k: ['(none)'] }))).toEqual(await ledger('le.task_id IS NULL'));
    expect(sumOf(await report({ g: ['tag:feature'], t: ['feature=search'] }))).toEqual(
      await ledger(`'feature=search' = ANY(t.tags)`),
    );
    expect(sumOf(await report({ g: ['month'], u: ['(none)'] }, true))).toEqual(await ledger('t.end_user IS NULL'));
  });
});

describe('the top spenders: orderBy AMOUNT_DESC with a unit, first N', () => {
  test("a month's top users by USD, ties by name; the same by CREDITS", async () => {
    const top = await report({ g: ['user'], unit: 'USD', o: 'AMOUNT_DESC', n: 2 }, true);
    expect(top.map((r) => [r.keys[0], r.totals])).toEqual([
      ['alice', [{ unit: 'USD', amount: '0.24' }]],
      ['bob', [{ unit: 'USD', amount: '0.12' }]], // "carol, jr." spent as much: ties go by name
    ]);
    const all = await report({ g: ['user'], unit: 'USD', o: 'AMOUNT_DESC' }, true);
    expect(all.map((r) => r.keys[0])).toEqual(['alice', 'bob', 'carol, jr.', '(none)']);
    const credits = await report({ g: ['user'], unit: 'CREDITS', o: 'AMOUNT_DESC', n: 10 }, true);
    expect(credits.map((r) => [r.keys[0], r.totals[0]!.amount])).toEqual([
      ['(none)', '31.9956'],
      ['alice', '31.9956'],
    ]);
  });

  test("a tag's values with (none), by amount: the (none) group competes like any other", async () => {
    const top = await report({ g: ['tag:feature'], unit: 'USD', o: 'AMOUNT_DESC', n: 2 });
    expect(top.map((r) => [r.keys[0], r.totals[0]!.amount])).toEqual([
      ['search', '0.24'],
      ['(none)', '0.2275'],
    ]);
  });

  test('first with the default order: the first groups by keys, every unit of each', async () => {
    const [none, first, ...rest] = await report({ g: ['apiKey'], n: 2 });
    expect(rest).toEqual([]);
    expect(none).toMatchObject({ keys: ['(none)'], totals: [{ unit: 'USD', amount: '-0.0125' }] }); // "(" sorts before digits and letters
    expect(first!.keys).toEqual([[ml.slice(3, 15), plain.slice(3, 15)].sort()[0]]);
    expect(first!.totals.map((t) => t.unit)).toEqual(['CREDITS', 'USD']);
  });

  test.each([
    ['AMOUNT_DESC without a unit', { o: 'AMOUNT_DESC' }, /^orderBy: amount compares amounts of one unit: give unit/],
    ['first 0', { n: 0 }, /^first: must be a whole number from 1 to 10000$/],
    ['first 10001', { n: 10_001 }, /^first: must be a whole number from 1 to 10000$/],
  ])('refused: %s', async (_name, vars, message) => {
    const res = await graphql(
      gw,
      ADMIN,
      `
        query ($from: DateTime!, $to: DateTime!, $o: SpendOrder, $n: Int) {
          spendReport(from: $from, to: $to, groupBy: ["user"], orderBy: $o, first: $n) {
            keys
          }
        }
      `,
      { from: monthStart.toISOString(), to: monthEnd.toISOString(), ...vars },
    );
    expect(res.body.errors?.[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT' } });
    expect(res.body.errors?.[0]?.message).toMatch(message);
  });

  test('spend.csv and the CLI take the same: unit, orderBy, first', async () => {
    const csv = await http(
      `${gw.url}/reports/spend.csv?from=${monthStart.toISOString()}&to=${monthEnd.toISOString()}&groupBy=user&unit=USD&orderBy=amount&first=1`,
      { key: ADMIN },
    );
    expect(
      csv.text
        .trim()
        .split('\n')
        .slice(1)
        .map((l) => l.split(',').slice(0, 3).join(',')),
    ).toEqual(['alice,USD,0.24']);
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        'dist/src/cli/main.js',
        'report',
        '--from',
        monthStart.toISOString(),
        '--to',
        monthEnd.toISOString(),
        '--group-by',
        'user',
        '--unit',
        'USD',
        '--order-by',
        'amount',
        '--first',
        '1',
        '--format',
        'json',
      ],
      { env: { PATH: process.env.PATH, DATABASE_URL: url } },
    );
    expect((JSON.parse(stdout) as Array<{ keys: string[]; amount: string }>).map((r) => [r.keys[0], r.amount])).toEqual(
      [['alice', '0.24']],
    );
  });
});

test.each([
  ['two who-dimensions', { groupBy: ['apiKey', 'user'] }, /^groupBy: one of apiKey, user, tag:<name> at a time/],
  [
    'a user filter with an apiKey grouping',
    { groupBy: ['apiKey'], users: ['alice'] },
    /^groupBy: one of apiKey, user, tag:<name> at a time/,
  ],
  [
    'tags of two names',
    { groupBy: ['project'], tags: ['a=1', 'b=2'] },
    /^tags: filter by values of one tag name at a time$/,
  ],
  [
    'a tag filter of another name than grouped',
    { groupBy: ['tag:feature'], tags: ['team=ml'] },
    /^tags: when grouping by tag:<name>, filter only by values of that tag$/,
  ],
  ['a tag without a value', { groupBy: ['project'], tags: ['team'] }, /^tags: each is name=value$/],
  ['users by day', { groupBy: ['user', 'day'], month: true }, /^groupBy: user reports are kept per month/],
  [
    'users by model',
    { groupBy: ['user', 'model'], month: true },
    /^groupBy: user reports are kept per project and month, not per model$/,
  ],
  [
    'a user report filtered by model',
    { groupBy: ['user'], models: ['seedream-4.0'], month: true },
    /^models: user reports are kept per project and month, not per model$/,
  ],
  [
    'users over a range that is not whole months',
    { groupBy: ['user'] },
    /user reports are kept per month: (from|to) must be the first of a month/,
  ],
  ['a bad tag name', { groupBy: ['tag:Feature'] }, /^groupBy: "tag:Feature" is not one of/],
  [
    'statuses with a who-report',
    { groupBy: ['apiKey'], statuses: ['ready'] },
    /^statuses: not with apiKey, user or tag reports/,
  ],
])('refused with a 400 that says why: %s', async (_name, q, message) => {
  const { month, ...args } = q as { month?: boolean; groupBy: string[] };
  // The 1st of a month would make "not whole months" pass; the test needs a range that is not.
  const from = month ? monthStart : today.getUTCDate() === 1 ? tomorrow : today;
  const to = month ? monthEnd : new Date(from.getTime() + 86_400_000);
  const res = await graphql(
    gw,
    ADMIN,
    `
      query (
        $from: DateTime!
        $to: DateTime!
        $groupBy: [String!]
        $apiKeys: [String!]
        $users: [String!]
        $tags: [String!]
        $statuses: [String!]
        $models: [String!]
      ) {
        spendReport(
          from: $from
          to: $to
          groupBy: $groupBy
          apiKeys: $apiKeys
          users: $users
          tags: $tags
          statuses: $statuses
          models: $models
        ) {
          keys
        }
      }
    `,
    { from: from.toISOString(), to: to.toISOString(), ...args },
  );
  expect(res.body.data).toBeNull();
  expect(res.body.errors?.[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT' } });
  expect(res.body.errors?.[0]?.message).toMatch(message);
});

test('spend.csv carries the new keys and filters (a user with a comma by repeating the parameter)', async () => {
  const base = `${gw.url}/reports/spend.csv?from=${monthStart.toISOString()}&to=${monthEnd.toISOString()}`;
  const res = await http(`${base}&groupBy=user&users=${encodeURIComponent('carol, jr.')}&users=bob`, { key: ADMIN });
  expect(res.status).toBe(200);
  const lines = res.text.trim().split('\n');
  expect(lines[0]!.startsWith('user,unit,amount,')).toBe(true);
  expect(lines.slice(1).map((l) => l.split(',unit')[0]!.replace(/,USD,.*/, ''))).toEqual(['bob', '"carol, jr."']);
  const tags = await http(
    `${gw.url}/reports/spend.csv?from=${today.toISOString()}&to=${tomorrow.toISOString()}&groupBy=tag:feature`,
    { key: ADMIN },
  );
  expect(tags.text.split('\n')[0]!.startsWith('tag:feature,unit,amount,')).toBe(true);
  expect(tags.text).toMatch(/^\(none\),CREDITS,31\.9956,/m);
});

test('`spendgate report --group-by tag:<name>` and `--group-by user` print the same groups', async () => {
  const run = (groupBy: string, month: boolean) =>
    promisify(execFile)(
      process.execPath,
      [
        'dist/src/cli/main.js',
        'report',
        '--from',
        (month ? monthStart : today).toISOString(),
        '--to',
        (month ? monthEnd : tomorrow).toISOString(),
        '--group-by',
        groupBy,
        '--format',
        'json',
      ],
      { env: { PATH: process.env.PATH, DATABASE_URL: url } },
    );
  const users = JSON.parse((await run('user', true)).stdout) as Array<{ keys: string[]; unit: string; amount: string }>;
  const graph = await report({ g: ['user'] }, true);
  expect(users.map((r) => [r.keys[0], r.unit, dec(r.amount).toFixed()])).toEqual(
    graph.flatMap((r) => r.totals.map((t) => [r.keys[0], t.unit, dec(t.amount).toFixed()])),
  );
  const tags = JSON.parse((await run('tag:team', false)).stdout) as Array<{ keys: string[] }>;
  expect(tags.map((r) => r.keys[0])).toEqual(expect.arrayContaining(['ml', '(none)']));
});

describe('focus.csv follows the FOCUS 1.2 column rules', () => {
  /** A CSV parser for RFC 4180 quoting (values hold commas and JSON). */
  function parseCsv(text: string): string[][] {
    const rows: string[][] = [];
    let row: string[] = [];
    let cell = '';
    let quoted = false;
    for (let i = 0; i < text.length; i++) {
      const c = text[i]!;
      if (quoted) {
        if (c === '"' && text[i + 1] === '"') {
          cell += '"';
          i++;
        } else if (c === '"') quoted = false;
        else cell += c;
      } else if (c === '"') quoted = true;
      else if (c === ',') {
        row.push(cell);
        cell = '';
      } else if (c === '\n') {
        row.push(cell);
        rows.push(row);
        row = [];
        cell = '';
      } else cell += c;
    }
    return rows;
  }
  async function focus(g: Gateway): Promise<Array<Record<string, string>>> {
    const res = await http(`${g.url}/reports/focus.csv?from=${monthStart.toISOString()}&to=${monthEnd.toISOString()}`, {
      key: ADMIN,
    });
    expect(res.status).toBe(200);
    const [header, ...rows] = parseCsv(res.text);
    expect(header).toEqual([...FOCUS_COLUMNS]);
    return rows.map((r) => {
      expect(r).toHaveLength(header!.length);
      return Object.fromEntries(header!.map((h, i) => [h, r[i]!]));
    });
  }
  // FOCUS 1.2 column ids this export uses (the specification's names, letter for letter).
  const FOCUS_1_2 = new Set([
    'BilledCost',
    'BillingAccountId',
    'BillingAccountName',
    'BillingCurrency',
    'BillingPeriodEnd',
    'BillingPeriodStart',
    'ChargeCategory',
    'ChargeClass',
    'ChargeDescription',
    'ChargeFrequency',
    'ChargePeriodEnd',
    'ChargePeriodStart',
    'ConsumedQuantity',
    'ConsumedUnit',
    'ContractedCost',
    'ContractedUnitPrice',
    'EffectiveCost',
    'InvoiceIssuerName',
    'ListCost',
    'ListUnitPrice',
    'PricingQuantity',
    'PricingUnit',
    'ProviderName',
    'PublisherName',
    'ServiceCategory',
    'ServiceName',
    'SkuId',
    'SkuPriceId',
    'SubAccountId',
    'SubAccountName',
    'Tags',
  ]);
  const NUMERIC = /^-?(0|[1-9]\d*)(\.\d+)?$/; // FOCUS numeric format: no exponent, no sign on positives, no separators
  const DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
  const UNIT = /^(\d+ )?[A-Z][A-Za-z]*$/; // FOCUS unit format: "<quantity> <plural units>" or "<plural units>"

  test('names, types, allowed values, ISO dates, currency, and the cost equals the ledger', async () => {
    const rows = await focus(gw);
    for (const name of FOCUS_COLUMNS) expect(FOCUS_1_2.has(name) || /^x_[A-Za-z]+$/.test(name)).toBe(true);
    expect([...FOCUS_1_2].every((name) => (FOCUS_COLUMNS as readonly string[]).includes(name))).toBe(true);
    expect(rows.length).toBeGreaterThanOrEqual(5);
    for (const r of rows) {
      for (const c of ['BilledCost', 'EffectiveCost', 'ListCost', 'ContractedCost']) expect(r[c]).toMatch(NUMERIC);
      for (const c of ['BillingPeriodStart', 'BillingPeriodEnd', 'ChargePeriodStart', 'ChargePeriodEnd'])
        expect(r[c]).toMatch(DATETIME);
      expect(r.ChargePeriodStart! < r.ChargePeriodEnd!).toBe(true);
      expect(r.BillingPeriodStart! <= r.ChargePeriodStart! && r.ChargePeriodEnd! <= r.BillingPeriodEnd!).toBe(true);
      expect(r.BillingCurrency).toBe('USD'); // ISO 4217
      expect(['Usage', 'Purchase', 'Tax', 'Credit', 'Adjustment']).toContain(r.ChargeCategory);
      expect(r.ChargeClass).toBe(''); // null: no corrections of invoiced periods
      expect(['One-Time', 'Recurring', 'Usage-Based']).toContain(r.ChargeFrequency);
      expect(r.ServiceCategory).toBe('AI and Machine Learning');
      for (const c of [
        'ProviderName',
        'PublisherName',
        'InvoiceIssuerName',
        'ServiceName',
        'SubAccountId',
        'SubAccountName',
        'BillingAccountId',
        'ChargeDescription',
      ])
        expect(r[c]).not.toBe('');
      const tags = JSON.parse(r.Tags!) as Record<string, unknown>;
      expect(typeof tags).toBe('object');
      expect(Object.values(tags).every((v) => v === null || ['string', 'number', 'boolean'].includes(typeof v))).toBe(
        true,
      );
      expect(tags['spendgate/project']).toBe('acme');
      if (r.ChargeCategory === 'Usage') {
        // Not null for Usage (ChargeClass is not Correction).
        expect(r.ConsumedQuantity).toMatch(NUMERIC);
        expect(r.PricingQuantity).toMatch(NUMERIC);
        expect(r.ConsumedUnit).toMatch(UNIT);
        expect(r.PricingUnit).toMatch(UNIT);
        expect(r.SkuId).not.toBe('');
        expect(r.SkuPriceId).toMatch(/@v\d+$/);
        // A SKU price's unit prices: not null for Usage, and times PricingQuantity they are its costs.
        expect(r.ListUnitPrice).toMatch(NUMERIC);
        expect(r.ContractedUnitPrice).toMatch(NUMERIC);
        expect(dec(r.PricingQuantity!).times(r.ListUnitPrice!).toFixed()).toBe(dec(r.ListCost!).toFixed());
        expect(dec(r.PricingQuantity!).times(r.ContractedUnitPrice!).toFixed()).toBe(dec(r.ContractedCost!).toFixed());
      } else {
        expect(r.ConsumedQuantity).toBe(''); // must be null unless Usage
        expect([r.SkuPriceId, r.ListUnitPrice]).toEqual(['', '']); // null together
      }
    }
    // The key's default tags are user tags (unprefixed); the key itself is spendgate's.
    const mlRow = rows.find((r) => r.x_ApiKeyPrefix === ml.slice(3, 15))!;
    expect(JSON.parse(mlRow.Tags!)).toEqual({
      team: 'ml',
      'spendgate/project': 'acme',
      'spendgate/api-key': ml.slice(3, 15),
    });
    expect(rows.filter((r) => r.ChargeCategory === 'Adjustment').map((r) => r.BilledCost)).toEqual(['-0.0125']);
    // USD rows: the exact amounts; their sum is the ledger's.
    const usd = rows.filter((r) => r.x_Unit === 'USD').reduce((s, r) => s.plus(dec(r.BilledCost!)), dec(0));
    expect(usd.toFixed()).toBe((await ledger(`le.unit = 'USD'`)).USD);
    // Credit rows without CREDITS_PER_USD: no FOCUS cost, and they say so; the credits are kept, a
    // row per SKU price (gemini-3.8-flash: input 955.5, cache read 109.2, output 4914 per 1M tokens).
    const credits = rows.filter((r) => r.x_Unit === 'CREDITS');
    expect(credits).toHaveLength(6); // two keys × three token classes
    for (const r of credits) {
      expect(r).toMatchObject({
        BilledCost: '0',
        EffectiveCost: '0',
        ListCost: '0',
        ListUnitPrice: '0',
        x_CreditsPerUsd: '',
        x_CostStatus: 'credits not converted: set a credit price (setCreditPrice) or CREDITS_PER_USD for a cost',
        x_UsdPerCredit: '',
        ConsumedUnit: 'Tokens',
        PricingUnit: '1000000 Tokens',
      });
    }
    const bySku = (key: string) =>
      credits
        .filter((r) => r.x_ApiKeyPrefix === key)
        .map((r) => [r.SkuId, r.ConsumedQuantity, r.PricingQuantity, r.x_Credits, r.x_Tasks]);
    expect(bySku(ml.slice(3, 15))).toEqual([
      ['gemini-3.8-flash/cache_read', '8000', '0.008', '0.8736', '1'],
      ['gemini-3.8-flash/input', '12000', '0.012', '11.466', '1'], // 20,000 prompt less 8,000 cached
      ['gemini-3.8-flash/output', '4000', '0.004', '19.656', '1'], // 1,500 candidates + 2,500 thoughts
    ]);
    const creditsOf = (key: string) =>
      bySku(key)
        .reduce((s, r) => s.plus(r[3]!), dec(0))
        .toFixed();
    expect(creditsOf(ml.slice(3, 15))).toBe('31.9956');
    const images = rows.find((r) => r.x_Unit === 'USD' && r.x_ApiKeyPrefix === ml.slice(3, 15))!;
    expect(images).toMatchObject({
      BilledCost: '0.24',
      ConsumedUnit: 'Images',
      ConsumedQuantity: '6',
      PricingUnit: 'Images',
      PricingQuantity: '6',
      ListUnitPrice: '0.04',
      ContractedUnitPrice: '0.04',
      x_Tasks: '2',
    });
  });

  /** A gateway on this database whose FOCUS export converts credits at CREDITS_PER_USD. */
  const convertingAt = (perUsd: string) =>
    gateway(url, { SIMULATOR_DELAY_MS: '600000', POLLER_ENABLED: 'false', CREDITS_PER_USD: perUsd });

  test('with CREDITS_PER_USD, credit rows carry their cost: credits ÷ rate, 10 places half-even, the rate shown', async () => {
    const converting = await convertingAt('3');
    try {
      const credits = (await focus(converting)).filter((r) => r.x_Unit === 'CREDITS');
      // Each SKU price converted: 11.466 / 3, 0.8736 / 3, 19.656 / 3, exact; the unit prices too.
      const input = credits.find((r) => r.SkuId === 'gemini-3.8-flash/input')!;
      expect(input).toMatchObject({ BilledCost: '3.822', ListUnitPrice: '318.5', ContractedUnitPrice: '318.5' });
      const keyCost = credits
        .filter((r) => r.x_ApiKeyPrefix === input.x_ApiKeyPrefix)
        .reduce((s, r) => s.plus(r.BilledCost!), dec(0));
      expect(keyCost.toFixed()).toBe('10.6652'); // 31.9956 / 3
      for (const r of credits) {
        expect(r.EffectiveCost).toBe(r.BilledCost);
        expect(r.ListCost).toBe(r.BilledCost);
        expect(r.x_CreditsPerUsd).toBe('3');
        expect(r.x_CostStatus).toMatch(/^converted at 3 credits per USD/);
      }
      const inexact = await convertingAt('9');
      try {
        const cached = (await focus(inexact)).find((r) => r.SkuId === 'gemini-3.8-flash/cache_read')!;
        expect(cached.BilledCost).toBe('0.0970666667'); // 0.8736 / 9 = 0.09706666…, rounded at the 10th place
      } finally {
        await inexact.close();
      }
    } finally {
      await converting.close();
    }
  });

  test("with finance's credit price for the month, credit rows cost credits × price (its version named), as convertedSpend converts them; CREDITS_PER_USD only where no price is in force", async () => {
    const month = monthStart.toISOString().slice(0, 7);
    const before = (await focus(gw)).filter((r) => r.x_Unit === 'CREDITS'); // kept by the report cache (decisions §22)
    expect(before.map((r) => r.x_UsdPerCredit)).toEqual(before.map(() => ''));
    const set = await graphql(
      gw,
      ADMIN,
      'mutation($m: String!) { setCreditPrice(effectiveMonth: $m, usdPerCredit: "0.00106") }',
      {
        m: month,
      },
    );
    expect(set.body.errors).toBeUndefined();
    // Published, the price reaches the cached export at once.
    const after = (await focus(gw)).filter((r) => r.x_Unit === 'CREDITS');
    expect(after.map((r) => r.x_UsdPerCredit)).toEqual(before.map(() => '0.00106'));
    const converting = await convertingAt('3');
    try {
      const credits = (await focus(converting)).filter((r) => r.x_Unit === 'CREDITS');
      const input = credits.find((r) => r.SkuId === 'gemini-3.8-flash/input')!;
      // 11.466 credits × 0.00106 = 0.01215396 USD, exact; 955.5 credits per 1M tokens × 0.00106 = 1.01283
      expect(input).toMatchObject({
        BilledCost: '0.01215396',
        ListUnitPrice: '1.01283',
        x_UsdPerCredit: '0.00106',
        x_CreditsPerUsd: '',
      });
      for (const r of credits)
        expect(r.x_CostStatus).toBe(
          `converted at credit price v${set.body.data.setCreditPrice} (0.00106 USD a credit, from ${month}), 10 places half-even`,
        );
      // The export's credit costs add up to convertedSpend's USD for the credits of the month.
      const converted = await graphql(
        converting,
        ADMIN,
        'query($f: DateTime!, $t: DateTime!) { convertedSpend(from: $f, to: $t, currency: "USD") { rows { unit converted } } }',
        { f: monthStart.toISOString(), t: monthEnd.toISOString() },
      );
      const creditRow = converted.body.data.convertedSpend.rows.find((r: { unit: string }) => r.unit === 'CREDITS');
      expect(credits.reduce((s, r) => s.plus(r.BilledCost!), dec(0)).toFixed()).toBe(creditRow!.converted);
    } finally {
      await converting.close();
    }
  });

  test('a bad CREDITS_PER_USD stops the service at start with the variable named', async () => {
    await expect(gateway(url, { CREDITS_PER_USD: '0' })).rejects.toThrow(/CREDITS_PER_USD/);
  });
});

test('an end user is summed over projects; grouping or filtering by project splits them', async () => {
  // Last in this file: it adds spend in a second project.
  const other = await projectWithKey(gw, 'globex');
  for (const user of ['alice', 'dave']) {
    const submitted = await submitGeneration(gw, other.key, imageBody({ n: 3 }), who(user)); // 0.12 USD
    await settle(other.key, submitted.body.data.taskId, 'ready');
  }
  const ask = async (vars: Record<string, unknown>) => {
    const res = await graphql<{ spendReport: ReportRow[] }>(
      gw,
      ADMIN,
      `
        query ($from: DateTime!, $to: DateTime!, $g: [String!], $p: [ID!], $o: SpendOrder, $n: Int) {
          spendReport(from: $from, to: $to, groupBy: $g, projectIds: $p, unit: USD, orderBy: $o, first: $n) {
            keys
            totals {
              unit
              amount
            }
          }
        }
      `,
      { from: monthStart.toISOString(), to: monthEnd.toISOString(), ...vars },
    );
    expect(res.body.errors).toBeUndefined();
    return res.body.data.spendReport.map((r) => [...r.keys, r.totals[0]!.amount].join(' '));
  };
  const aliceEverywhere = (await ledger(`t.end_user = 'alice'`)).USD;
  expect(aliceEverywhere).toBe('0.36');
  expect(await ask({ g: ['user'], o: 'AMOUNT_DESC', n: 1 })).toEqual(['alice 0.36']);
  expect(await ask({ g: ['project', 'user'], o: 'AMOUNT_DESC', n: 3 })).toEqual([
    'acme alice 0.24',
    'acme bob 0.12',
    'acme carol, jr. 0.12',
  ]);
  expect(await ask({ g: ['user'], p: [other.projectId] })).toEqual(['alice 0.12', 'dave 0.12']);
  expect(await ask({ g: ['project', 'user'], p: [other.projectId], o: 'AMOUNT_DESC', n: 1 })).toEqual([
    'globex alice 0.12',
  ]);
});
