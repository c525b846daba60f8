/**
 * The console in a real browser (Debian's Chromium through playwright-core) against a real
 * gateway on real PostgreSQL: sign-in as admin and as a project key, the overview's figures equal
 * spendReport's to the last decimal, a refusal on the budgets page, resolving a review-queue task,
 * publishing prices, what a project key cannot see or do, and that no page fetches anything from
 * outside the gateway (GraphiQL included), decisions §9. The reconciliation page: upload, summary,
 * accept and dispute (decisions §14).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { openBrowser, outsideRequests, signIn } from '../../bench/browser.js';
import type { Gateway } from '../../src/bootstrap.js';
import { CONTENT_SECURITY_POLICY } from '../../src/console/web-pages.js';
import { Decimal } from '../../src/pricing/money.js';
import {
  ADMIN,
  eventually,
  freshDatabase,
  gateway,
  graphql,
  http,
  keyWithTags,
  projectWithKey,
  sql,
  submitGeneration,
} from '../support/harness.js';

let gw: Gateway;
let browser: Browser;
let a: { projectId: string; key: string };
let b: { projectId: string; key: string };
const day = (offset: number) => {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + offset)).toISOString();
};
const image = { model: 'seedream-4.0', prompt: 'a red fox', resolution: '2K' };

async function settled(projectId: string, count: number): Promise<void> {
  await eventually(async () => {
    const res = await graphql(
      gw,
      ADMIN,
      `
        query ($p: [ID!]) {
          tasks(first: 50, filter: { projectIds: $p, statuses: ["ready"] }) {
            edges {
              node {
                taskId
              }
            }
          }
        }
      `,
      { p: [projectId] },
    );
    return res.body.data.tasks.edges.length >= count;
  }, 20_000);
}

/** A page that also records any request leaving the gateway and any CSP violation. */
async function newPage(): Promise<{ page: Page; outside: string[]; violations: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const outside = outsideRequests(page, gw.url);
  const violations: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
  });
  page.on('pageerror', (e) => violations.push(`page error: ${e.message}`));
  return { page, outside, violations };
}

const go = async (page: Page, route: string, ready: string) => {
  await page.goto(`${gw.url}/console/#/${route}`);
  await page.waitForSelector(`[data-ready=${ready}]`);
};

beforeAll(async () => {
  gw = await gateway(await freshDatabase(), {
    SIMULATOR_DELAY_MS: '100',
    UPSTREAM_TIMEOUT_MS: '400',
    UPSTREAM_CONNECT_TIMEOUT_MS: '200',
  });
  browser = await openBrowser();
  a = await projectWithKey(gw, 'search-team');
  b = await projectWithKey(gw, 'video-team');
  const tagged = await keyWithTags(gw, a.projectId, ['team=search']);
  for (const [key, user] of [
    [a.key, 'customer-1'],
    [tagged, 'customer-2'],
    [tagged, 'customer-1'],
    [b.key, 'customer-9'],
  ] as const) {
    expect(
      (await submitGeneration(gw, key, image, { 'x-spendgate-user': user, 'x-spendgate-tags': 'feature=summaries' }))
        .status,
    ).toBe(200);
  }
  await settled(a.projectId, 3);
  await settled(b.projectId, 1);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await gw?.close();
});

test('served by the gateway: / leads to /console/, a strict CSP, and GraphiQL renders with nothing fetched from outside', async () => {
  const root = await http(`${gw.url}/`);
  expect(root.status).toBe(200); // fetch followed the redirect
  expect(root.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY);
  expect(CONTENT_SECURITY_POLICY).toMatch(/^default-src 'self';/);
  expect(root.text).not.toMatch(/https?:\/\//);
  const redirect = await fetch(`${gw.url}/`, { redirect: 'manual' });
  expect([redirect.status, redirect.headers.get('location')]).toEqual([302, '/console/']);
  const missing = await http(`${gw.url}/console/assets/nope.js`);
  expect(missing.status).toBe(404);

  const { page, outside, violations } = await newPage();
  const introspection = page.waitForResponse(
    async (r) => r.url() === `${gw.url}/graphql` && (await r.text()).includes('"__schema"'),
  );
  await page.goto(`${gw.url}/graphiql`);
  await page.waitForSelector('.graphiql-container');
  expect((await introspection).status()).toBe(200);
  expect(outside).toEqual([]);
  expect(violations).toEqual([]);
  await page.close();
});

test('admin: every page renders from the gateway alone; the overview equals spendReport to the last decimal', async () => {
  const { page, outside, violations } = await newPage();
  await signIn(page, gw.url, ADMIN);
  expect(await page.textContent('[data-testid=viewer]')).toBe('admin');
  await page.waitForSelector('[data-ready=overview]');
  await page.waitForSelector('[data-testid=chart-USD][data-drawn=yes]');

  const report = async (from: string, to: string) =>
    (
      await graphql(
        gw,
        ADMIN,
        `
          query ($f: DateTime!, $t: DateTime!) {
            spendReport(from: $f, to: $t) {
              totals {
                unit
                amount
              }
            }
          }
        `,
        { f: from, t: to },
      )
    ).body.data.spendReport[0].totals[0].amount;
  const shown = (id: string) => page.getAttribute(`[data-testid=${id}-USD]`, 'data-amount');
  expect(await shown('today')).toBe(await report(day(0), day(1)));
  expect(await shown('range')).toBe(await report(day(-29), day(1)));
  expect(await shown('today')).toBe('0.24'); // four 2K images at 0.06
  const top = await graphql(
    gw,
    ADMIN,
    `
      query ($f: DateTime!, $t: DateTime!) {
        spendReport(from: $f, to: $t, groupBy: ["project"], unit: USD, orderBy: AMOUNT_DESC, first: 5) {
          keys
          totals {
            amount
          }
        }
      }
    `,
    { f: day(-29), t: day(1) },
  );
  const rows = await page.$$eval('[data-testid=top-projects] tr', (trs) =>
    trs.map((tr) => [
      tr.querySelector('.key')!.textContent,
      tr.querySelector('[data-amount]')!.getAttribute('data-amount'),
    ]),
  );
  expect(rows).toEqual(
    top.body.data.spendReport.map((r: { keys: string[]; totals: { amount: string }[] }) => [
      r.keys[0],
      r.totals[0]!.amount,
    ]),
  );
  expect(await page.textContent('[data-testid=top-users]')).toContain('customer-1');
  expect(await page.textContent('[data-testid=top-tags]')).toContain('summaries');

  for (const [route, ready] of [
    ['budgets', 'budgets'],
    ['tasks', 'tasks'],
    ['review', 'review'],
    ['prices', 'prices'],
    ['alerts', 'alerts'],
    ['months', 'months'],
    ['reconciliation', 'reconciliation'],
  ])
    await go(page, route!, ready!);
  expect(outside).toEqual([]);
  expect(violations).toEqual([]);

  // The token is kept nowhere the page can read: the session is an HttpOnly cookie, never in the URL.
  expect(
    await page.evaluate(
      `[sessionStorage.length, localStorage.length, document.cookie, location.href.includes('token')]`,
    ),
  ).toEqual([0, 0, '', false]);
  const cookies = await page.context().cookies();
  expect(cookies.find((c) => c.name === 'sg_session')).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
  // Sign-out ends the session on the server: a reload finds no session.
  await page.click('text=Sign out');
  await page.waitForSelector('input[name=token]');
  await page.reload();
  await page.waitForSelector('input[name=token]');
  expect(await page.$('[data-testid=viewer]')).toBeNull();
  await page.close();
}, 60_000);

test('a signed-in reload asks who is signed in once, beside the scripts, and shows its page without the sign-in form first; sign-out stays out', async () => {
  const { page, violations } = await newPage();
  await signIn(page, gw.url, ADMIN);
  await page.waitForSelector('[data-ready=overview]');
  // Whether the sign-in form is ever drawn during the reload (a flash of it before the page).
  await page.addInitScript(`{
    const seen = new MutationObserver(() => { if (document.querySelector('input[name=token]')) window.formShown = true; });
    seen.observe(document, { subtree: true, childList: true });
  }`);
  const asked: string[] = [];
  page.on('request', (r) => {
    if (r.url() === `${gw.url}/auth/session`) asked.push(r.method());
  });
  await page.reload();
  await page.waitForSelector('[data-ready=overview] [data-testid=chart-USD][data-drawn=yes]');
  expect(asked).toEqual(['GET']);
  // One answer, fetched by index.html's preload (initiator "link"), not after the scripts ran.
  const fetched = await page.evaluate(`performance.getEntriesByType('resource')
    .filter((e) => e.name.endsWith('/auth/session')).map((e) => e.initiatorType)`);
  expect(fetched).toEqual(['link']);
  expect(await page.evaluate('window.formShown ?? false')).toBe(false);
  expect(await page.textContent('[data-testid=viewer]')).toBe('admin');

  // The answer the page opened with is used once: after a sign-out the form asks again and stays.
  const checked = page.waitForResponse((r) => r.url() === `${gw.url}/auth/session`);
  await page.click('text=Sign out');
  expect((await (await checked).json()).signedIn).toBe(false);
  await page.waitForSelector('input[name=token]');
  expect(await page.$('[data-testid=viewer]')).toBeNull();
  expect(violations).toEqual([]);
  await page.close();
}, 60_000);

test("a signed-in reload sends the overview's first queries before its first paint, each once", async () => {
  const { page, violations } = await newPage();
  await signIn(page, gw.url, ADMIN);
  await page.waitForSelector('[data-ready=overview][data-compared=yes]');
  // Each GraphQL operation the page sends (its name, when), and when the shell is first painted.
  await page.addInitScript(`{
    window.sent = [];
    const send = window.fetch;
    window.fetch = (input, init) => {
      const op = /(?:query|mutation)\\s+(\\w+)/.exec(typeof init?.body === 'string' ? init.body : '')?.[1];
      if (op) window.sent.push([op, performance.now()]);
      return send(input, init);
    };
    const seen = new MutationObserver(() => {
      if (!document.querySelector('[data-testid=viewer]')) return;
      seen.disconnect();
      requestAnimationFrame(() => (window.paintAt = performance.now())); // the frame that first paints the shell
    });
    seen.observe(document, { subtree: true, childList: true });
  }`);
  await page.reload();
  await page.waitForSelector('[data-ready=overview][data-compared=yes]');
  const { sent, paintAt } = (await page.evaluate('({ sent: window.sent, paintAt: window.paintAt })')) as {
    sent: [string, number][];
    paintAt: number;
  };
  const first = ['Overview', 'Early', 'Projects', 'ReviewCount'];
  // Sent before the shell's first paint (not from the components' effects, which run after it), and not again.
  for (const op of first) {
    const times = sent.filter(([name]) => name === op).map(([, at]) => at);
    expect({ op, times: times.length }).toEqual({ op, times: 1 });
    expect({ op, beforePaint: times[0]! < paintAt }).toEqual({ op, beforePaint: true });
  }
  expect(violations).toEqual([]);
  await page.close();
}, 60_000);

test('a project key sees its own project read-only: no admin actions, and the API refuses them', async () => {
  const { page } = await newPage();
  await page.goto(`${gw.url}/`);
  await page.fill('input[name=token]', 'sg_not_a_key');
  await page.click('button[type=submit]');
  expect(await page.textContent('.sign-in [role=alert]')).toMatch(/not a valid token or key/);
  await signIn(page, gw.url, b.key);
  expect(await page.textContent('[data-testid=viewer]')).toBe('project video-team · read-only');
  expect(await page.$('select[name=project]')).toBeNull();
  await go(page, 'tasks', 'tasks');
  expect(await page.$$('tr[data-testid^=task-]')).toHaveLength(1);
  await go(page, 'prices', 'prices');
  expect(await page.$('form.publish')).toBeNull();
  await page.goto(`${gw.url}/console/#/alerts`);
  await page.waitForSelector('text=a project key cannot see endpoints');
  for (const hidden of ['people', 'tokens', 'audit']) expect(await page.$(`nav a[href="#/${hidden}"]`)).toBeNull();
  // What the page hides, the API refuses: the same session trying an owner's mutation from the page.
  const refused = await page.evaluate(async () => {
    const { csrfToken } = (await (await fetch('/auth/session')).json()) as { csrfToken: string };
    const res = await fetch('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-csrf-token': csrfToken },
      body: JSON.stringify({ query: 'mutation { createProject(name: "sneaky") }' }),
    });
    return ((await res.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code;
  });
  expect(refused).toBe('FORBIDDEN');
  await page.close();
}, 60_000);

test('a budget refusal shows on the budgets page', async () => {
  await graphql(
    gw,
    ADMIN,
    `
      mutation ($p: ID!) {
        setBudget(projectId: $p, unit: USD, limit: "0.2", period: MONTHLY, hard: true, thresholds: [50])
      }
    `,
    { p: b.projectId },
  );
  let status = 200;
  for (let i = 0; i < 6 && status !== 402; i++) status = (await submitGeneration(gw, b.key, image)).status;
  expect(status).toBe(402);
  const { page } = await newPage();
  await signIn(page, gw.url, ADMIN);
  await page.selectOption('select[name=project]', b.projectId);
  await go(page, 'budgets', 'budgets');
  const card = page.locator('article.budget');
  await card.locator('li.refused').waitFor();
  expect(await card.locator('li.refused').textContent()).toMatch(/refused a submission/);
  expect(await card.textContent()).toMatch(/crossed 50 %/);
  const api = await graphql(
    gw,
    ADMIN,
    `
      query ($p: ID!) {
        budgetStatus(projectId: $p) {
          remaining
        }
      }
    `,
    { p: b.projectId },
  );
  expect(await card.locator('[data-testid=remaining]').getAttribute('data-amount')).toBe(
    api.body.data.budgetStatus[0].remaining,
  );
  // A budget minutes old has no history to forecast from: the card says so (decisions §15).
  expect(await card.locator('[data-testid=forecast]').textContent()).toBe('not enough history yet');
  await page.close();
}, 60_000);

test('resolving a review-queue task in the console appends to the ledger', async () => {
  await http(`${gw.simulatorUrl}/__sim/config`, { body: { resetRate: 1 } });
  const unknown = await submitGeneration(gw, a.key, image);
  await http(`${gw.simulatorUrl}/__sim/config`, { body: { resetRate: 0 } });
  expect(unknown.status).toBe(504);
  const taskId = unknown.body.details.gatewayTaskId as string;

  const { page } = await newPage();
  await signIn(page, gw.url, ADMIN);
  await go(page, 'review', 'review');
  await page.click(`tr[data-testid="task-${taskId}"] a`);
  await page.waitForSelector('[data-ready=task]');
  await page.check('input[value=RELEASE]');
  await page.fill('input[name=reason]', 'vendor confirmed it never ran');
  await page.click('form.resolve button[type=submit]');
  await page.waitForSelector('[data-testid=resolution]');
  expect(await page.textContent('[data-testid=resolution]')).toMatch(/release — vendor confirmed it never ran/);
  const task = await graphql(
    gw,
    ADMIN,
    `
      query ($t: ID!) {
        task(taskId: $t) {
          needsReview
          ledgerEntries {
            kind
            amount
          }
        }
      }
    `,
    { t: taskId },
  );
  expect(task.body.data.task).toEqual({
    needsReview: false,
    ledgerEntries: [
      { kind: 'hold', amount: '0.06' },
      { kind: 'release', amount: '0.06' },
    ],
  });
  expect(
    await page.$$eval('[data-testid=ledger] td[data-amount]', (tds) => tds.map((td) => td.getAttribute('data-amount'))),
  ).toEqual(['0.06', '0.06']);
  await go(page, 'review', 'review');
  expect(await page.$(`tr[data-testid="task-${taskId}"]`)).toBeNull();
  await page.close();
}, 60_000);

test('the price book shows what a version published from the console changed', async () => {
  const { page } = await newPage();
  await signIn(page, gw.url, ADMIN);
  await go(page, 'prices', 'prices');
  await page.fill('textarea[name=rates]', 'seedream-4.0,image,2K,0.07,USD');
  await page.fill('input[name=note]', 'seedream up');
  await page.click('form.publish button[type=submit]');
  await page.waitForSelector('text=Published version 2.');
  await page.waitForSelector('[data-testid=price-diff]');
  const diff = await page.$$eval('[data-testid=price-diff] tbody tr', (trs) =>
    trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)),
  );
  expect(diff).toEqual([['seedream-4.0 · image · 2K', '0.06', '0.07', 'USD per image']]);
  await page.close();
}, 60_000);

test("reconciliation: a statement uploaded from the file picker, its summary, the vendor's figure taken and a difference disputed", async () => {
  // The statement the vendor would send for what settled, one task billed 0.01 more and one task that is not ours.
  const billed = (await sql(
    gw,
    `SELECT upstream_task_id::text AS v, model, accepted_at, charge_amount::text AS amount, unit::text FROM task WHERE settled_at IS NOT NULL AND charge_amount <> 0 ORDER BY id`,
  )) as Array<{ v: string; model: string; accepted_at: Date; amount: string; unit: string }>;
  expect(billed.length).toBeGreaterThanOrEqual(4);
  const lines = billed.map(
    (t, i) =>
      `${t.v},${t.model},${t.accepted_at.toISOString()},${i === 0 ? new Decimal(t.amount).plus('0.01').toFixed() : t.amount},${t.unit}`,
  );
  lines.push(`777000001,seedream-4.0,${billed[0]!.accepted_at.toISOString()},0.06,USD`);
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'spendgate-console-')), 'vendor-november.csv');
  writeFileSync(file, `task_id,model,time,amount,unit\n${lines.join('\n')}\n`);

  const { page, outside, violations } = await newPage();
  await signIn(page, gw.url, ADMIN);
  await go(page, 'reconciliation', 'reconciliation');
  await page.setInputFiles('[data-testid=statement-file]', file);
  await page.click('form.upload button[type=submit]');
  await page.waitForSelector(`text=Imported ${billed.length + 1} new rows.`);
  await page.waitForSelector('[data-testid=classes]');
  const classes = await page.$$eval('[data-testid=classes] tbody tr', (trs) =>
    trs.map((tr) => [tr.getAttribute('data-class'), tr.querySelectorAll('td')[1]!.textContent]),
  );
  expect(classes).toEqual(
    expect.arrayContaining([
      ['matched', String(billed.length - 1)],
      ['amount_differs', '1'],
      ['billed_not_ours', '1'],
    ]),
  );
  expect(await page.textContent('h2:has-text("Summary")')).toMatch(
    new RegExp(`${((100 * (billed.length - 1)) / (billed.length + 1)).toFixed(1)} % matched`),
  );

  // Only what differs in amount: take the vendor's figure; the ledger gets the exact 0.01.
  await page.selectOption('[data-testid=class-filter]', 'amount_differs');
  await page.waitForSelector('[data-testid=differences] tbody tr >> text=amount differs');
  await page.click('[data-testid=differences] button:has-text("Take vendor\'s figure")');
  await page.waitForSelector('text=No difference here.');
  const [adjusted] = await sql(
    gw,
    `SELECT e.amount::text AS amount FROM ledger_entry e JOIN task t ON t.id = e.task_id WHERE t.upstream_task_id = $1 AND e.kind = 'adjustment'`,
    [billed[0]!.v],
  );
  expect(adjusted).toEqual({ amount: '0.01' });
  // The task the vendor billed that is not ours: disputed with a note (a prompt), no money moves.
  await page.selectOption('[data-testid=class-filter]', 'billed_not_ours');
  await page.waitForSelector('[data-testid=differences] tbody tr >> text=777000001');
  page.once('dialog', (d) => void d.accept('not a task of ours'));
  await page.click('[data-testid=differences] button:has-text("dispute")');
  await page.waitForSelector('text=No difference here.');
  await page.selectOption('[data-testid=state-filter]', 'disputed');
  expect(await page.textContent('[data-testid=differences] tbody')).toContain(
    'disputed: not a task of ours (ADMIN_TOKEN)',
  );
  const csvPath = await page.getAttribute('a:has-text("Differences as CSV")', 'href');
  const csv = await http(`${gw.url}${csvPath}`, { key: ADMIN });
  expect(csv.text).toContain(',777000001,,seedream-4.0,USD,,0.06,,disputed,not a task of ours');
  expect(outside).toEqual([]);
  expect(violations).toEqual([]);
  await page.close();
}, 60_000);
