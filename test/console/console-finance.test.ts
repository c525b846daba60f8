/**
 * The console answers finance's questions (decisions §9), in Debian's Chromium against a real gateway
 * on the bench:reports data set (20,000 settled tasks over the last 90 days): a month picked from
 * the range control shows exactly spendReport's figures and the previous period's, survives a
 * reload; the downloads are byte-identical to the API's answers; the largest bar opens exactly its
 * tasks; filters are chips; keys show their names; figures follow one money rule.
 */
import { readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { openBrowser, outsideRequests, signIn } from '../../bench/browser.js';
import type { Gateway } from '../../src/bootstrap.js';
import { Database } from '../../src/database/database.js';
import { ProjectsService } from '../../src/projects/projects.service.js';
import { ADMIN, gateway, graphql, http } from '../support/harness.js';
import { reportsDatabase } from '../support/reports-data.js';

let gw: Gateway;
let browser: Browser;
/** Instants from/to (to exclusive), and the range control's days: first and last (inclusive). */
let october: { from: string; to: string; pfrom: string; pto: string; first: string; last: string };

/** The calendar month before last, relative to today (October on 2026-11-25), and the one before it. */
function monthBeforeLast() {
  const now = new Date();
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const previous = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 2, 1));
  const day = (d: Date) => d.toISOString().slice(0, 10);
  return {
    from: start.toISOString(),
    to: end.toISOString(),
    pfrom: previous.toISOString(),
    pto: start.toISOString(),
    first: day(start),
    last: day(new Date(end.getTime() - 86_400_000)),
  };
}

const report = async (variables: Record<string, unknown>, args = '') =>
  (
    await graphql(
      gw,
      ADMIN,
      `query($f: DateTime!, $t: DateTime!${args ? ', $m: [String!]' : ''}) { spendReport(from: $f, to: $t${args}) { keys tasks totals { unit amount } } }`,
      variables,
    )
  ).body.data.spendReport as Array<{ keys: string[]; tasks: number; totals: { unit: string; amount: string }[] }>;

beforeAll(async () => {
  const url = await reportsDatabase(20_000, 500);
  const db = new Database(url, 2);
  const project = (await db.query<{ id: string }>(`SELECT id FROM project ORDER BY name LIMIT 1`)).rows[0]!.id;
  await new ProjectsService(db).issueKey(project, [], { name: 'search backend' });
  const spending = (
    await db.query<{ project_id: string; unit: string }>(
      `SELECT project_id::text, unit::text FROM ledger_entry WHERE kind = 'charge' AND effective_at >= date_trunc('month', now()) ORDER BY effective_at DESC LIMIT 1`,
    )
  ).rows[0]!;
  await db.close();
  gw = await gateway(url, { SIMULATOR_DELAY_MS: '100' });
  // A soft budget already passed: the overview's early warning has something to show above the chart.
  const soft = await graphql(
    gw,
    ADMIN,
    `mutation($p: ID!) { setBudget(projectId: $p, unit: ${spending.unit}, limit: "0.01", period: MONTHLY, hard: false) }`,
    { p: spending.project_id },
  );
  expect(soft.body.errors).toBeUndefined();
  browser = await openBrowser();
  october = monthBeforeLast();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await gw?.close();
});

async function admin(width = 1280, height = 900): Promise<Page> {
  const page = await browser.newPage({ viewport: { width, height }, acceptDownloads: true });
  await signIn(page, gw.url, ADMIN);
  return page;
}

test("a month picked from the range control shows spendReport's figures and the previous month's; the URL reloads to the same view", async () => {
  const page = await admin();
  const outside = outsideRequests(page, gw.url);
  await page.waitForSelector('[data-ready=overview]');
  await page.fill('input[name=month]', october.from.slice(0, 7));
  await page.waitForFunction(`location.hash.includes('from=${october.first}')`);
  await page.waitForSelector(
    `[data-compared=yes] [data-testid=card-range] h2:has-text("${new Date(october.from).toLocaleString('en', { month: 'long', year: 'numeric', timeZone: 'UTC' })}")`,
  );
  const [month] = await report({ f: october.from, t: october.to });
  const [before] = await report({ f: october.pfrom, t: october.pto });
  const check = async () => {
    for (const unit of ['USD', 'CREDITS']) {
      expect(await page.getAttribute(`[data-testid=range-${unit}]`, 'data-amount')).toBe(
        month!.totals.find((t) => t.unit === unit)!.amount,
      );
      expect(await page.getAttribute(`[data-testid=range-change] [data-unit=${unit}]`, 'data-previous')).toBe(
        before!.totals.find((t) => t.unit === unit)!.amount,
      );
    }
    // Every top model's previous figure is spendReport's for that model in the month before.
    const rows = await page.$$eval('[data-testid=top-models] tr[data-key]', (trs) =>
      trs.map((tr) => [
        tr.getAttribute('data-key'),
        tr.querySelector('[data-unit]')!.getAttribute('data-unit'),
        tr.querySelector('[data-previous]')?.getAttribute('data-previous'),
      ]),
    );
    expect(rows.length).toBeGreaterThan(4);
    for (const [model, unit, previous] of rows) {
      const [row] = await report({ f: october.pfrom, t: october.pto, m: [model] }, ', models: $m');
      expect([model, previous]).toEqual([model, row?.totals.find((t) => t.unit === unit)?.amount ?? '0']);
    }
  };
  await check();
  const address = page.url();
  expect(address).toContain(`from=${october.first}&to=${october.last}`);
  await page.reload();
  await page.waitForSelector('[data-compared=yes] [data-testid=range-change]');
  expect(page.url()).toBe(address);
  await check();
  // Readable on the card, exact in its tooltip: USD with two decimals.
  const usd = month!.totals.find((t) => t.unit === 'USD')!.amount;
  expect(await page.textContent('[data-testid=range-USD]')).toMatch(/^\$[\d,]+\.\d\d$/);
  const [whole, fraction] = usd.split('.');
  expect(await page.getAttribute('[data-testid=range-USD]', 'title')).toBe(
    `$${whole!.replace(/\B(?=(\d{3})+(?!\d))/g, ',')}${fraction ? `.${fraction}` : ''}`,
  );
  expect(outside).toEqual([]);
  await page.close();
}, 90_000);

test("the downloads of the range are byte-identical to the API's answers, started with the session (no token in a URL)", async () => {
  const page = await admin();
  await page.goto(`${gw.url}/console/#/overview?from=${october.first}&to=${october.last}`);
  await page.waitForSelector('[data-ready=overview]');
  for (const [id, name] of [
    ['download-csv', 'spend'],
    ['download-focus', 'focus'],
  ] as const) {
    const link = await page.getAttribute(`[data-testid=${id}]`, 'href');
    expect(link).not.toMatch(/token|sg_|Bearer/i);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click(`[data-testid=${id}]`)]);
    expect(download.suggestedFilename()).toBe(`${name}-${october.first}-to-${october.last}.csv`);
    const file = readFileSync((await download.path())!);
    const api = await fetch(`${gw.url}${link}`, { headers: { authorization: `Bearer ${ADMIN}` } });
    expect(api.status).toBe(200);
    expect(file.equals(Buffer.from(await api.arrayBuffer()))).toBe(true);
    expect(file.length).toBeGreaterThan(1000);
  }
  await page.close();
}, 60_000);

const EDGE_PX = 4;

/**
 * The month before last's overview, settled, and its largest bar (of the days `day` picks): the
 * day, the model, its spendReport cell, and the middle of its band relative to the chart's pointer
 * layer.
 */
async function largestBar(page: Page, day?: (keys: string[]) => boolean) {
  await page.goto(`${gw.url}/console/#/overview?from=${october.first}&to=${october.last}`);
  await page.waitForSelector('[data-compared=yes] [data-testid=chart-USD][data-drawn=yes]');
  // Nothing may move the chart between measuring a bar and clicking it: every request of the page
  // answered (comparisons, tags, the project picker's names). CI once clicked where a bar had been.
  await page.waitForSelector('select[name=project] option:nth-child(2)', { state: 'attached' });
  await page.locator('[data-testid=chart-USD]').scrollIntoViewIfNeeded();
  const shown = await page.$eval('[data-testid=chart-USD] .plot', (host) =>
    (host as unknown as { plot: { series: { label: string }[] } }).plot.series.slice(1).map((s) => s.label),
  );
  const cells = (
    await graphql(
      gw,
      ADMIN,
      `
        query ($f: DateTime!, $t: DateTime!) {
          spendReport(from: $f, to: $t, groupBy: ["day", "model"], unit: USD) {
            keys
            tasks
            totals {
              amount
            }
          }
        }
      `,
      { f: october.from, t: october.to },
    )
  ).body.data.spendReport as Array<{ keys: string[]; tasks: number; totals: { amount: string }[] }>;
  const largest = cells
    .filter((c) => shown.includes(c.keys[1]!) && (day?.(c.keys) ?? true))
    .sort((a, b) => Number(b.totals[0]!.amount) - Number(a.totals[0]!.amount))[0]!;
  const [dayOf, model] = largest.keys as [string, string];
  // Where that band is drawn: the middle of its segment of the day's stacked bar, relative to the
  // plot's pointer layer. The locator's click scrolls to it, waits until it is still, and checks the
  // layer itself receives the pointer there (nothing drawn over it) before it clicks: CI once read
  // the point, then something moved under it.
  const point = await page.$eval(
    '[data-testid=chart-USD] .plot',
    (host, [d, m]) => {
      const u = (
        host as unknown as {
          plot: { series: { label: string }[]; data: number[][]; valToPos(v: number, s: string): number };
        }
      ).plot;
      const s = u.series.findIndex((x) => x.label === m);
      const i = u.data[0]!.indexOf(Date.parse(`${d}T00:00:00Z`) / 1000);
      const top = u.data[s]![i]!;
      const bottom = u.data[s + 1]?.[i] ?? 0;
      return { x: u.valToPos(u.data[0]![i]!, 'x'), y: u.valToPos((top + bottom) / 2, 'y') };
    },
    [dayOf, model],
  );
  // A bar on the range's first or last day is centred on the plot's left or right edge (x = 0 or its
  // width), where the pointer layer ends: clicked EDGE_PX inside, on the same bar (half a bar is
  // ~12 px wide at this size). One pixel inside the left edge reached no click listener (CI on
  // 2026-12-04, when the month's largest bar was its first day's).
  const layer = (await page.locator('[data-testid=chart-USD] .u-over').boundingBox())!;
  const inside = (v: number, size: number) => Math.min(Math.max(v, EDGE_PX), size - EDGE_PX);
  point.x = inside(point.x, layer.width);
  point.y = inside(point.y, layer.height);
  return { dayOf, model, largest, point, layer };
}

test("clicking the largest bar lists exactly that day's tasks of that model (count and sum equal the bar); filters are removable chips", async () => {
  const page = await admin();
  const { dayOf, model, largest, point, layer } = await largestBar(page);
  await page.locator('[data-testid=chart-USD] .u-over').click({ position: point });
  await page.waitForSelector('[data-ready=tasks]').catch(async (error: Error) => {
    // Once in CI the click opened nothing: say where it landed and what the chart read there.
    const seen = await page
      .$eval('[data-testid=chart-USD] .plot', (host) => {
        const u = (host as unknown as { plot: { cursor: { idx?: number | null; left?: number; top?: number } } }).plot;
        return { idx: u.cursor.idx, left: u.cursor.left, top: u.cursor.top };
      })
      .catch(() => 'no chart');
    throw new Error(
      `${error.message}\nclicked ${JSON.stringify(point)} in ${JSON.stringify(layer)} for ${dayOf} ${model}; the chart read ${JSON.stringify(seen)} at ${page.url()}`,
    );
  });
  expect(page.url()).toContain(`model=${model}`);
  expect(await page.getAttribute('[data-testid=task-totals]', 'data-tasks')).toBe(String(largest.tasks));
  expect(await page.getAttribute('[data-testid=task-totals] [data-total-unit=USD]', 'data-amount')).toBe(
    largest.totals[0]!.amount,
  );
  expect(await page.$$eval('[data-testid=chips] li', (lis) => lis.map((li) => li.getAttribute('data-filter')))).toEqual(
    ['from', 'to', 'model', 'posted'],
  );
  // Removing the model chip widens the list to every model of that day.
  await page.click('[data-testid=chips] li[data-filter=model] button');
  await page.waitForFunction(`!location.hash.includes('model=')`);
  const [dayTotal] = await report({
    f: `${dayOf}T00:00:00Z`,
    t: new Date(Date.parse(`${dayOf}T00:00:00Z`) + 86_400_000).toISOString(),
  });
  await page.waitForSelector(`[data-ready=tasks] [data-testid=task-totals][data-tasks="${dayTotal!.tasks}"]`);
  await page.close();
}, 90_000);

test('a bar opens its own day and model after the chart moved with no scroll or resize event (the click is measured)', async () => {
  const page = await admin();
  const { dayOf, model, point } = await largestBar(page);
  const over = page.locator('[data-testid=chart-USD] .u-over');
  // The chart library measures its pointer against a box kept since the pointer last came in; a
  // layout that moves the chart sends it no event. Before, the click then read a day 100 px away.
  await over.hover({ position: { x: 10, y: 10 } });
  await page.$eval('[data-testid=chart-USD]', (e) => e.setAttribute('style', 'transform: translateX(-100px)'));
  await over.click({ position: point });
  await page.waitForSelector('[data-ready=tasks]', { timeout: 10_000 });
  expect(page.url()).toContain(`model=${model}`);
  expect(page.url()).toContain(`from=${dayOf}`);
  await page.close();
}, 60_000);

test("the largest bars of the range's first and last days, drawn half at the chart's edges, open their own day and model", async () => {
  for (const edge of [october.first, october.last]) {
    const page = await admin();
    const { dayOf, model, point } = await largestBar(page, (keys) => keys[0] === edge);
    await page.locator('[data-testid=chart-USD] .u-over').click({ position: point });
    await page.waitForSelector('[data-ready=tasks]', { timeout: 10_000 });
    expect(page.url()).toContain(`model=${model}`);
    expect(page.url()).toContain(`from=${dayOf}`);
    expect(dayOf).toBe(edge);
    await page.close();
  }
}, 60_000);

test('the overview shows once its early warning answered too: nothing arrives later above the chart to move it under the pointer', async () => {
  const page = await admin();
  // The warning's answer held back 1.5 s: before, the page showed without it and the chart moved down when it came.
  await page.route('**/graphql', async (route) => {
    if (/query Early\b/.test(route.request().postData() ?? '')) await new Promise((r) => setTimeout(r, 1500));
    await route.continue();
  });
  await page.goto(`${gw.url}/console/#/overview?from=${october.first}&to=${october.last}`);
  await page.waitForSelector('[data-testid=chart-USD][data-drawn=yes]');
  expect(await page.$('[data-testid=early-warning] [data-testid=at-risk]')).not.toBeNull();
  const top = () => page.$eval('[data-testid=chart-USD]', (e) => e.getBoundingClientRect().top);
  const first = await top();
  await page.waitForLoadState('networkidle');
  expect(await top()).toBe(first);
  await page.close();
}, 60_000);

test('a top list row opens its tasks; a key shows its name beside its prefix; the API refuses hostile filters with a 400', async () => {
  const page = await admin();
  await page.goto(`${gw.url}/console/#/overview?from=${october.first}&to=${october.last}`);
  await page.waitForSelector('[data-ready=overview]');
  const first = page.locator('[data-testid=top-projects] tr[data-key] a').first();
  const name = await first.textContent();
  await first.click();
  await page.waitForSelector('[data-ready=tasks]');
  expect(await page.textContent('[data-testid=chips] li[data-filter=project]')).toContain(name!);
  const projects = (
    await graphql(
      gw,
      ADMIN,
      `
        {
          projects {
            id
            name
            apiKeys {
              prefix
              name
            }
          }
        }
      `,
    )
  ).body.data.projects as unknown as Array<{ id: string; name: string; apiKeys: { prefix: string; name: string }[] }>;
  const named = projects.find((p) => p.apiKeys.length)!;
  await page.goto(`${gw.url}/console/#/tasks?key=${named.apiKeys[0]!.prefix}`);
  await page.waitForSelector('[data-ready=tasks]');
  expect(await page.textContent('[data-testid=chips] li[data-filter=key]')).toBe(
    `key: search backend · ${named.apiKeys[0]!.prefix}×`,
  );
  const hostile = await graphql(
    gw,
    ADMIN,
    `
      query ($u: [String!]) {
        taskTotals(filter: { users: $u }) {
          tasks
        }
      }
    `,
    { u: Array.from({ length: 101 }, (_, i) => `u${i}`) },
  );
  expect(hostile.body.errors![0]).toMatchObject({
    message: 'filter.users: at most 100 values',
    extensions: { code: 'BAD_USER_INPUT' },
  });
  const csv = await http(`${gw.url}/reports/spend.csv?from=${october.from}&to=${october.to}`);
  expect(csv.status).toBe(401); // a download without the session's cookie or a token is refused
  await page.close();
}, 60_000);
