/**
 * `npm run bench:console`: the console's overview and budgets pages in Debian's Chromium on the
 * bench:reports data set (1,000,000 settled tasks, 50 projects, 100,000 end users), against a real
 * gateway. Each sample is a fresh page load: from navigation to the page's figures on screen (the
 * overview's chart drawn). The overview also without cached answers (REPORT_CACHE_MB=0: every load
 * computes, as before decisions §22) and warm (the answers kept by an earlier load), in the same
 * run. Also as a finance person (the ADMIN_TOKEN's every read is audited, decisions §11: not what a
 * reader pays) and reloaded in the same browser (its scripts cached, the answers kept: a person pressing
 * reload). Prints p50 and worst of each, and the first-load JavaScript gzipped; writes
 * bench/results/console.json. Targets (decisions §9): under 1 s (warm overview: 300 ms); first-load
 * JavaScript under 30 KB gzipped; a month picked equals spendReport's figures for it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Browser } from 'playwright-core';
import { startGateway } from '../src/bootstrap.js';
import { Database } from '../src/database/database.js';
import { ProjectsService } from '../src/projects/projects.service.js';
import { PeopleService } from '../src/people/people.service.js';
import { TokensService } from '../src/people/tokens.service.js';
import { openBrowser } from './browser.js';
import { seed, TASKS, USERS } from './reports-data.js';
import { machine, publish, withScratchPostgres } from './support.js';

const ADMIN = 'bench-admin-token-0123456789';
const RUNS = Number(process.env.BENCH_RUNS ?? 7);

/** The JavaScript and CSS the console's page loads before it shows anything (the chart comes later). */
function firstLoadBytes(): { js: number; css: number } {
  const dir = path.join('dist', 'console');
  const html = readFileSync(path.join(dir, 'index.html'), 'utf8');
  const sizes = { js: 0, css: 0 };
  for (const [, file] of html.matchAll(/(?:src|href)="\/console\/(assets\/[^"]+)"/g)) {
    const gz = gzipSync(readFileSync(path.join(dir, file!))).length;
    if (file!.endsWith('.js')) sizes.js += gz;
    else sizes.css += gz;
  }
  return sizes;
}

/** The range card's exact figures per unit, as the page shows them in data-amount. */
async function monthFigures(
  browser: Browser,
  url: string,
  token: string,
  route: string,
): Promise<Record<string, string>> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.request.post(`${url}/auth/token`, { data: { token } });
  const page = await context.newPage();
  await page.goto(`${url}/console/#/${route}`);
  await page.waitForSelector('[data-ready=overview] [data-testid=card-range]', { timeout: 30_000 });
  const figures = await page.$$eval('[data-testid=card-range] [data-amount]', (ps) =>
    Object.fromEntries(
      ps.map((p) => [p.getAttribute('data-testid')!.replace('range-', ''), p.getAttribute('data-amount')!]),
    ),
  );
  await context.close();
  return figures;
}

async function timeLoads(
  browser: Browser,
  url: string,
  token: string,
  route: string,
  ready: string,
): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    // Signed in as a person would be: the session cookie already in this browser.
    await context.request.post(`${url}/auth/token`, { data: { token } });
    const page = await context.newPage();
    const started = performance.now();
    await page.goto(`${url}/console/#/${route}`);
    await page.waitForSelector(ready, { timeout: 30_000 });
    samples.push(performance.now() - started);
    await context.close();
  }
  return samples.sort((a, b) => a - b);
}

/** One signed-in browser reloading the page: the first load, then RUNS reloads timed. */
async function timeReloads(browser: Browser, url: string, token: string, route: string, ready: string) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.request.post(`${url}/auth/token`, { data: { token } });
  const page = await context.newPage();
  await page.goto(`${url}/console/#/${route}`);
  await page.waitForSelector(ready, { timeout: 30_000 });
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    await new Promise((r) => setTimeout(r, 300)); // the page's later requests (comparisons) end first
    const started = performance.now();
    await page.reload();
    await page.waitForSelector(ready, { timeout: 30_000 });
    samples.push(performance.now() - started);
  }
  await context.close();
  return samples.sort((a, b) => a - b);
}

const p50 = (xs: number[]) => xs[Math.floor(xs.length / 2)]!;
const round = (ms: number) => Math.round(ms);

await withScratchPostgres('console', [], async (server) => {
  const db = new Database(server.url, 4);
  const seeded = Date.now();
  await seed(db);
  console.log(
    `seeded ${TASKS.toLocaleString('en')} tasks, ${USERS.toLocaleString('en')} users in ${((Date.now() - seeded) / 1000).toFixed(0)} s`,
  );
  const start = (env: Record<string, string> = {}) =>
    startGateway({
      DATABASE_URL: server.url,
      PORT: '0',
      LOG_LEVEL: 'silent',
      ADMIN_TOKEN: ADMIN,
      POLLER_ENABLED: 'false',
      NODE_ENV: 'production',
      ...env,
    });
  const gw = await start();
  // The same gateway without cached answers (REPORT_CACHE_MB=0): every load computes every figure, as before §22.
  const uncached = await start({ REPORT_CACHE_MB: '0' });
  const browser = await openBrowser();
  try {
    // The busiest project's budgets: the whole project, one key, one tag and each end user.
    const project = (await db.query<{ id: string }>(`SELECT id FROM project ORDER BY name LIMIT 1`)).rows[0]!.id;
    const key = await new ProjectsService(db).issueKey(project, ['team=search']);
    const gql = (query: string) =>
      fetch(`${gw.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` },
        body: JSON.stringify({ query }),
      }).then((r) => r.json());
    for (const scope of ['', ', scope: TAG, scopeValue: "feature=f1"', ', scope: EACH_USER']) {
      const set = (await gql(
        `mutation { setBudget(projectId: "${project}", unit: USD, limit: "100000", period: MONTHLY, hard: true, thresholds: [50, 80]${scope}) }`,
      )) as { errors?: unknown };
      if (set.errors) throw new Error(JSON.stringify(set.errors));
    }
    const overview = await timeLoads(
      browser,
      gw.url,
      ADMIN,
      'overview',
      '[data-ready=overview] [data-testid=chart-USD][data-drawn=yes]',
    );
    // Cold (nothing kept: the uncached gateway) and warm (the cached one, whose first load above kept the answers).
    const overviewCold = await timeLoads(
      browser,
      uncached.url,
      ADMIN,
      'overview',
      '[data-ready=overview] [data-testid=chart-USD][data-drawn=yes]',
    );
    const overviewWarm = await timeLoads(
      browser,
      gw.url,
      ADMIN,
      'overview',
      '[data-ready=overview] [data-testid=chart-USD][data-drawn=yes]',
    );
    // A finance person (no audit record per read), fresh loads and reloads of one browser.
    const finance = await new PeopleService(db).invite('finance@bench.example', { role: 'FINANCE' }, 'bench');
    const person = (await new TokensService(db).create({ personId: finance.id }, 'bench')).secret;
    const CHART = '[data-ready=overview] [data-testid=chart-USD][data-drawn=yes]';
    const overviewPerson = await timeLoads(browser, gw.url, person, 'overview', CHART);
    const overviewReload = await timeReloads(browser, gw.url, person, 'overview', CHART);
    const budgets = await timeLoads(browser, gw.url, key, 'budgets', '[data-ready=budgets] article.budget');
    // A month picked on the 1M tasks (the month before last, October on 2026-11-25): the page's
    // figures against spendReport's for the same range, and how long that view takes.
    const now = new Date();
    const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1));
    const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
    const last = new Date(end.getTime() - 86_400_000).toISOString().slice(0, 10);
    const monthRoute = `overview?from=${start.toISOString().slice(0, 10)}&to=${last}`;
    const month = await timeLoads(
      browser,
      gw.url,
      ADMIN,
      monthRoute,
      '[data-ready=overview] [data-testid=chart-USD][data-drawn=yes]',
    );
    const shown = await monthFigures(browser, gw.url, ADMIN, monthRoute);
    const api = (await gql(
      `{ spendReport(from: "${start.toISOString()}", to: "${end.toISOString()}", first: 1) { totals { unit amount } } }`,
    )) as { data: { spendReport: { totals: { unit: string; amount: string }[] }[] } };
    const expected = Object.fromEntries(api.data.spendReport[0]!.totals.map((t) => [t.unit, t.amount]));
    const matches = JSON.stringify(shown) === JSON.stringify(expected);
    if (!matches)
      throw new Error(
        `the month on the page ${JSON.stringify(shown)} differs from spendReport ${JSON.stringify(expected)}`,
      );
    const bytes = firstLoadBytes();
    const out = {
      machine: `${machine()}, PostgreSQL 18 embedded, Chromium ${browser.version()}`,
      date: new Date().toISOString(),
      tasks: TASKS,
      users: USERS,
      runs: RUNS,
      overviewMs: { p50: round(p50(overview)), worst: round(overview.at(-1)!) },
      overviewColdMs: { p50: round(p50(overviewCold)), worst: round(overviewCold.at(-1)!) },
      overviewWarmMs: { p50: round(p50(overviewWarm)), worst: round(overviewWarm.at(-1)!) },
      overviewFinanceMs: { p50: round(p50(overviewPerson)), worst: round(overviewPerson.at(-1)!) },
      overviewReloadMs: { p50: round(p50(overviewReload)), worst: round(overviewReload.at(-1)!) },
      budgetsMs: { p50: round(p50(budgets)), worst: round(budgets.at(-1)!) },
      monthMs: { p50: round(p50(month)), worst: round(month.at(-1)!), route: monthRoute, equalsSpendReport: matches },
      firstLoadGzipBytes: bytes,
    };
    console.log(
      `overview (admin, all projects, 30 days, chart drawn): p50 ${out.overviewMs.p50} ms, worst ${out.overviewMs.worst} ms (target < 1000)`,
    );
    console.log(
      `overview without cached answers (every load computes): p50 ${out.overviewColdMs.p50} ms; warm (cached, after one load): p50 ${out.overviewWarmMs.p50} ms (target ≤ 300)`,
    );
    console.log(
      `overview as a finance person: fresh load p50 ${out.overviewFinanceMs.p50} ms; reloaded in the same browser p50 ${out.overviewReloadMs.p50} ms, worst ${out.overviewReloadMs.worst} ms (target ≤ 300)`,
    );
    console.log(
      `budgets (project key, 3 budgets incl. each-user): p50 ${out.budgetsMs.p50} ms, worst ${out.budgetsMs.worst} ms (target < 1000)`,
    );
    console.log(
      `a month picked (${monthRoute}, chart drawn): p50 ${out.monthMs.p50} ms, worst ${out.monthMs.worst} ms; its figures equal spendReport's: ${matches ? 'yes' : 'NO'}`,
    );
    console.log(
      `first-load JavaScript ${(bytes.js / 1024).toFixed(1)} KB gzipped, CSS ${(bytes.css / 1024).toFixed(1)} KB (target < 30 KB; the chart library and every page but the overview load after)`,
    );
    publish('console', out);
  } finally {
    await browser.close();
    await gw.close();
    await uncached.close();
    await db.close();
  }
});
