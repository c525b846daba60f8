/**
 * The books in the console (decisions §9, §13) (Debian's Chromium against a real gateway): a bar's or a row's
 * drill-down
 * counts what the row counts, adjustments and late items included (item 8); a comparison across
 * adjustments reads "was …", never "new" or "−103.2 %"; token rates are per 1M tokens (item 9);
 * the Months page offers Close only where a close can happen and tells two closes of a month
 * apart; the budgets page has no dead "Pick a project:"; a re-sent statement counts its new rows
 * (item 11).
 */
import type { Browser, Page } from 'playwright-core';
import { openBrowser, signIn } from '../../bench/browser.js';
import type { Gateway } from '../../src/bootstrap.js';
import { LedgerService } from '../../src/ledger/ledger.service.js';
import { Decimal } from '../../src/pricing/money.js';
import { acceptedTask } from '../support/builders.js';
import { ADMIN, freshDatabase, gateway, graphql, projectWithKey } from '../support/harness.js';

let gw: Gateway;
let browser: Browser;
let projectId: string;
const now = new Date();
const day = (monthsBack: number, d: number) =>
  new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - monthsBack, d, 12));
const label = (monthsBack: number) => day(monthsBack, 1).toISOString().slice(0, 7);
const lastDay = (monthsBack: number) =>
  new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - monthsBack + 1, 0)).toISOString().slice(0, 10);

async function settled(vendorId: number, at: Date, amount = '0.04') {
  const held = await acceptedTask(gw, { projectId, upstreamTaskId: String(vendorId), acceptedAt: at });
  await gw.app.get(LedgerService).settle({
    taskId: held.taskId,
    status: 'ready',
    charge: {
      unit: 'USD',
      exactness: 'EXACT',
      amount: new Decimal(amount),
      lines: [],
      warnings: [],
      needsReview: false,
    },
    usage: {},
    rollup: { images: '1' },
  });
}

const adjust = async (amount: string, at: Date, taskId?: string) => {
  const res = await graphql(
    gw,
    ADMIN,
    `
      mutation ($p: ID!, $a: Decimal!, $at: DateTime, $t: ID) {
        adjustLedger(projectId: $p, unit: USD, amount: $a, reason: "a correction", effectiveAt: $at, taskId: $t)
      }
    `,
    {
      p: projectId,
      a: amount,
      at: taskId ? null : at.toISOString(),
      t: taskId ?? null,
    },
  );
  expect(res.body.errors).toBeUndefined();
};

beforeAll(async () => {
  gw = await gateway(await freshDatabase(), { POLLER_ENABLED: 'false', LEDGER_SEAL_MS: '0', EARLY_WARNING_MS: '0' });
  browser = await openBrowser();
  projectId = (await projectWithKey(gw, 'books')).projectId;
  // The month before last: a task and an adjustment of 1.25 (no model). Last month: four images,
  // one adjusted by 0.02, and a credit of 0.04 with no model.
  await settled(9_000_001, day(2, 4));
  await adjust('1.25', day(2, 5));
  for (let i = 0; i < 4; i++) await settled(9_000_010 + i, day(1, 10));
  await adjust('0.02', day(1, 10), '9000010');
  await adjust('-0.04', day(1, 11));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await gw?.close();
});

async function admin(): Promise<Page> {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await signIn(page, gw.url, ADMIN);
  return page;
}

test('item 8: a top model\'s row opens tasks that add up to it; the adjustments row is compared, not "new"', async () => {
  const page = await admin();
  await page.goto(`${gw.url}/console/#/overview?from=${label(1)}-01&to=${lastDay(1)}`);
  await page.waitForSelector('[data-compared=yes]');
  const row = page.locator('[data-testid=top-models] tr[data-key="seedream-4.0"]');
  expect(await row.locator('td[data-amount]').getAttribute('data-amount')).toBe('0.18'); // 4 × 0.04 + 0.02
  expect(await page.textContent('[data-testid=top-models] tr[data-key="(adjustment)"] .change')).toBe('was $1.25');
  await row.locator('a').click();
  await page.waitForSelector('[data-ready=tasks]');
  expect(await page.getAttribute('[data-testid=task-totals]', 'data-tasks')).toBe('4');
  expect(await page.getAttribute('[data-testid=task-totals] [data-total-unit=USD]', 'data-amount')).toBe('0.18');
  expect(await page.textContent('[data-testid=task-totals]')).toMatch(/^4 tasks · posted \$0\.18$/);
  expect(await page.textContent('[data-testid=chips] li[data-filter=to]')).toMatch(/^to \(inclusive\)/);
  await page.context().close();
}, 60_000);

test('item 9: the price book states token rates per 1M tokens', async () => {
  const page = await admin();
  await page.goto(`${gw.url}/console/#/prices`);
  await page.waitForSelector('[data-ready=prices] [data-testid=rates-in-force]');
  const cells = await page.$$eval(
    '[data-testid=rates-in-force] tr[data-model="claude-sonnet-5"] td[data-rate]',
    (tds) => tds.map((td) => td.textContent ?? ''),
  );
  expect(cells.length).toBeGreaterThan(0);
  for (const cell of cells) expect(cell).toMatch(/ per 1M tokens$/);
  await page.context().close();
}, 60_000);

test('item 11: Close only on the month a close may take; two closes of a month told apart; the budgets page reads as it is; a re-sent statement counts its new rows', async () => {
  const next = await graphql(
    gw,
    ADMIN,
    `
      {
        monthToClose
      }
    `,
  );
  expect(next.body.data.monthToClose).toBe(label(2));
  const page = await admin();
  await page.goto(`${gw.url}/console/#/months`);
  await page.waitForSelector('[data-ready=months]');
  expect(
    await page.$$eval('[data-testid=months] button', (bs) =>
      bs.map((b) => b.textContent).filter((t) => t?.startsWith('Close')),
    ),
  ).toEqual([`Close ${label(2)}`]);
  expect(await page.textContent(`[data-testid=months] tr[data-month="${label(1)}"]`)).toContain(
    `closes after ${label(2)} (months close in order)`,
  );

  // Closed, reopened and closed again: the list says which close is in force.
  for (const step of [
    `closeMonth(month: "${label(2)}") { month }`,
    `reopenMonth(month: "${label(2)}", reason: "a late credit")`,
    `closeMonth(month: "${label(2)}") { month }`,
  ]) {
    expect((await graphql(gw, ADMIN, `mutation { ${step} }`)).body.errors).toBeUndefined();
  }
  const closes = await graphql(
    gw,
    ADMIN,
    `
      {
        closedMonths {
          month
          version
          inForce
        }
      }
    `,
  );
  expect(closes.body.data.closedMonths).toEqual([
    { month: label(2), version: 2, inForce: true },
    { month: label(2), version: 1, inForce: false },
  ]);
  await page.reload();
  await page.waitForSelector('[data-ready=months]');
  expect(await page.textContent(`[data-testid=months] tr[data-month="${label(2)}"]`)).toContain(
    '(close 2, after a reopening)',
  );
  expect(await page.textContent('section[data-ready=months] ul')).toContain(`${label(2)}, close 1: closed`);

  await page.goto(`${gw.url}/console/#/budgets`);
  await page.waitForSelector('[data-ready=budgets]');
  expect(await page.textContent('section[data-ready=budgets]')).not.toContain('Pick a project:');

  const send = (csv: string) =>
    fetch(`${gw.url}/reports/vendor-statements`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'text/csv' },
      body: csv,
    });
  const line = (id: number) => `${id},seedream-4.0,${day(1, 10).toISOString()},0.04,USD`;
  expect((await send(`task_id,model,time,amount,unit\n${[9_000_011, 9_000_012].map(line).join('\n')}\n`)).status).toBe(
    201,
  );
  expect(
    (await send(`task_id,model,time,amount,unit\n${[9_000_011, 9_000_012, 9_000_013].map(line).join('\n')}\n`)).status,
  ).toBe(201);
  await page.goto(`${gw.url}/console/#/reconciliation`);
  await page.waitForSelector('[data-ready=reconciliation] [data-testid=imports]');
  const newest = page.locator('[data-testid=imports] tbody tr').first();
  expect(await newest.locator('td.num').first().textContent()).toBe('1 (+2 skipped: an earlier statement holds them)');
  expect(await newest.locator('td.num').nth(1).textContent()).toBe('100.0 %');
  await page.context().close();
}, 90_000);

test('the price book shows each list rate beside the contracted one, and the contract’s terms (decisions §19)', async () => {
  const published = await graphql(
    gw,
    ADMIN,
    `
      mutation {
        publishContract(
          note: "console"
          terms: [
            { scope: "family", value: "gpt-5.6", unit: CREDITS, discountPercent: "22" }
            { scope: "model", value: "gpt-5.6-luna", unit: CREDITS, component: "output", tier: "base", netRate: "700" }
            { scope: "model", value: "veo-3.1", unit: USD, component: "video_seconds:4K", netRate: "0.3" }
          ]
        )
      }
    `,
  );
  expect(published.body.errors).toBeUndefined();
  const page = await admin();
  await page.goto(`${gw.url}/console/#/prices`);
  await page.waitForSelector('[data-ready=prices] [data-testid=contract]');
  const cells = async (model: string) =>
    page.$$eval(`[data-testid=rates-in-force] tr[data-model="${model}"]`, (trs) =>
      trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '').join(' | ')),
    );
  const luna = await cells('gpt-5.6-luna');
  // input base: 147.784 × 0.78 = 115.27152; output base: the net rate; output long: 1330.056 × 0.78 = 1037.44368
  expect(luna).toContain(
    'gpt-5.6-luna | credits | token | input | base (input ≤ 272,000) | 147.784 per 1M tokens | 115.27152 per 1M tokens',
  );
  expect(luna).toContain(
    'gpt-5.6-luna | credits | token | output | base (input ≤ 272,000) | 886.704 per 1M tokens | 700 per 1M tokens',
  );
  expect(luna).toContain(
    'gpt-5.6-luna | credits | token | output | long | 1330.056 per 1M tokens | 1037.44368 per 1M tokens',
  );
  for (const row of await cells('claude-sonnet-5')) expect(row).toMatch(/ \| = list$/);
  const terms = await page.$$eval('[data-testid=contract] tbody tr', (trs) =>
    trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '').join(' | ')),
  );
  expect(terms).toContain('family gpt-5.6 | credits | 22 % off the list rate');
  // A net rate is in its list rate's terms: a token line's per 1M tokens, said as the list's is.
  expect(terms).toContain('model gpt-5.6-luna | credits | net 700 per 1M tokens for output (base tier)');
  expect(terms).toContain('model veo-3.1 | USD | net 0.3 per second for video_seconds:4K');
  // The contract ends: every rate is the list rate again.
  await graphql(
    gw,
    ADMIN,
    `
      mutation {
        publishContract(terms: [])
      }
    `,
  );
  await page.reload();
  await page.waitForSelector('[data-ready=prices] [data-testid=rates-in-force]');
  expect(await page.textContent('[data-testid=rates-in-force]')).toContain(
    'No contract: the list rates are what is owed.',
  );
  await page.context().close();
}, 60_000);

test('the overview shows the range converted, labelled with the rates’ versions, beside the exact cards (decisions §19)', async () => {
  const month = new Date().toISOString().slice(0, 7);
  await settled(9_000_100, new Date(Date.now() - 3_600_000)); // 0.04 USD this month
  const set = await graphql(
    gw,
    ADMIN,
    `mutation { setFxRate(currency: "EUR", effectiveMonth: "${month}", perUsd: "0.9") }`,
  );
  expect(set.body.errors).toBeUndefined();
  const from = `${month}-01`;
  const to = new Date().toISOString().slice(0, 10);
  const expected = (
    await graphql(
      gw,
      ADMIN,
      `
        query ($f: DateTime!, $t: DateTime!) {
          convertedSpend(from: $f, to: $t, currency: "EUR") {
            amount
            label
          }
        }
      `,
      { f: `${from}T00:00:00Z`, t: new Date(Date.parse(`${to}T00:00:00Z`) + 86_400_000).toISOString() },
    )
  ).body.data.convertedSpend;
  expect(expected.amount).toBe('0.036'); // 0.04 USD × 0.9
  const page = await admin();
  await page.goto(`${gw.url}/console/#/overview?from=${from}&to=${to}`);
  const line = page.locator('[data-testid=converted]');
  await line.waitFor();
  expect(await line.getAttribute('data-currency')).toBe('USD');
  await page.selectOption('[data-testid=converted] select[name=currency]', 'EUR');
  await page.waitForSelector('[data-testid=converted][data-currency=EUR]');
  expect(await line.getAttribute('data-amount')).toBe('0.036');
  expect(await line.textContent()).toContain('0.04 EUR'); // shown to two places; the exact figure in data-amount
  expect(await line.textContent()).toContain(expected.label);
  expect(expected.label).toMatch(/^converted to EUR at EUR v\d+ \(0\.9 per USD, from \d{4}-\d\d\)/);
  // Rounded on the decimal text, as every amount is: a rate may carry 18 places, and 0.04 ×
  // 25.124999999999999975 is 1.004999999999999999, which is 1.00 (as a float it was shown 1.01).
  await graphql(
    gw,
    ADMIN,
    `mutation { setFxRate(currency: "EUR", effectiveMonth: "${month}", perUsd: "25.124999999999999975") }`,
  );
  await page.reload();
  await page.selectOption('[data-testid=converted] select[name=currency]', 'EUR');
  await page.waitForSelector('[data-testid=converted][data-currency=EUR][data-amount="1.004999999999999999"]');
  expect(await line.textContent()).toContain('1.00 EUR');
  await page.context().close();
}, 60_000);

test('cached answers (decisions §22): the overview says when its figures were computed; a reload is answered from memory, a change is not', async () => {
  const page = await admin();
  const caches: string[] = [];
  page.on('response', (res) => {
    if (res.url().endsWith('/graphql') && res.request().postData()?.includes('query Overview'))
      caches.push(`${res.status()} ${res.headers()['x-spendgate-cache'] ?? ''}`);
  });
  const route = `${gw.url}/console/#/overview?from=${label(1)}-01&to=${lastDay(1)}`;
  await page.goto(route);
  await page.waitForSelector('[data-ready=overview] [data-testid=computed-at]');
  const first = await page.getAttribute('[data-testid=computed-at]', 'data-computed-at');
  expect(await page.textContent('[data-testid=computed-at]')).toMatch(
    /^Figures computed \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/,
  );
  const rangeBefore = await page.getAttribute('[data-testid=card-range] [data-testid=range-USD]', 'data-amount');
  await page.reload();
  await page.waitForSelector('[data-ready=overview] [data-testid=computed-at]');
  expect(await page.getAttribute('[data-testid=computed-at]', 'data-computed-at')).toBe(first);
  expect(caches.at(-1)).toBe('200 hit');
  // Back and forth in one page: the query is asked again with its ETag and answered 304.
  await page.goto(`${gw.url}/console/#/tasks`);
  await page.waitForSelector('[data-ready=tasks]');
  await page.goto(route);
  await page.waitForSelector('[data-ready=overview] [data-testid=computed-at]');
  for (let i = 0; i < 50 && caches.at(-1) !== '304 hit'; i++) await page.waitForTimeout(100);
  expect(caches.at(-1)).toBe('304 hit');
  // A correction last month: the next load computes again, and says so.
  await adjust('0.5', day(1, 12));
  await page.reload();
  await page.waitForSelector('[data-ready=overview] [data-testid=computed-at]');
  // (The page shows its oldest figure's time: today's, unchanged, still answered from memory.)
  expect(caches.at(-1)).toBe('200 computed');
  const rangeAfter = await page.getAttribute('[data-testid=card-range] [data-testid=range-USD]', 'data-amount');
  expect(new Decimal(rangeAfter!).minus(rangeBefore!).toFixed()).toBe('0.5');
  await page.context().close();
}, 60_000);
