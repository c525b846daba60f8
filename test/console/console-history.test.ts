/**
 * The Months page with an archived month (decisions §18), in Chromium: the month reads closed,
 * final and archived; an owner is told to restore it before reopening it instead of being offered
 * a Reopen that the API refuses; and the archived months are listed with what went to their files.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { openBrowser, signIn } from '../../bench/browser.js';
import type { Gateway } from '../../src/bootstrap.js';
import { LedgerSealer } from '../../src/ledger/ledger-sealer.js';
import { acceptedTask, settleAsImage } from '../support/builders.js';
import { ADMIN, freshDatabase, gateway, graphql, projectWithKey } from '../support/harness.js';

const ARCHIVE_DIR = mkdtempSync(path.join(tmpdir(), 'spendgate-archive-'));
const now = new Date();
// The month before last: over for more than a week whatever today is, so it may be archived.
const MONTH = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 2, 1)).toISOString().slice(0, 7);

let url: string;
let gw: Gateway;
let browser: Browser;

const cli = (...args: string[]): Promise<{ code: number; out: string }> =>
  new Promise((resolve) =>
    execFile(
      process.execPath,
      ['dist/src/cli/main.js', ...args],
      { env: { PATH: process.env.PATH, DATABASE_URL: url, ARCHIVE_DIR } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? -1) : 0, out: `${stdout}${stderr}` }),
    ),
  );

beforeAll(async () => {
  url = await freshDatabase();
  gw = await gateway(url, { POLLER_ENABLED: 'false', LEDGER_SEAL_MS: '0', EARLY_WARNING_MS: '0', ARCHIVE_DIR });
  browser = await openBrowser();
  const { projectId } = await projectWithKey(gw, 'history');
  for (let i = 0; i < 2; i++) {
    const held = await acceptedTask(gw, {
      projectId,
      upstreamTaskId: String(930_000 + i),
      acceptedAt: new Date(`${MONTH}-0${5 + i}T12:00:00Z`),
    });
    expect((await settleAsImage(gw, held.taskId)).settled).toBe(true);
  }
  const closed = await graphql(gw, ADMIN, 'mutation($m: String!) { closeMonth(month: $m) { month } }', { m: MONTH });
  expect(closed.body.errors).toBeUndefined();
  await new LedgerSealer(gw.db).sealAll();
  expect(await cli('archive', MONTH)).toMatchObject({ code: 0, out: expect.stringMatching(/: 2 tasks/) });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await gw?.close();
});

test('an archived month reads archived, offers no Reopen but the way to restore it, and is listed with its files', async () => {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await signIn(page, gw.url, ADMIN);
  await page.goto(`${gw.url}/console/#/months`);
  await page.waitForSelector('[data-ready=months] [data-testid=archived-months]');
  const row = page.locator(`[data-testid=months] tr[data-month="${MONTH}"]`);
  expect(await row.locator('.badge').textContent()).toBe('closed · final · archived');
  // The latest closed month, and the admin may reopen months: but not this one until it is restored.
  expect(await row.locator('button', { hasText: 'reopen' }).count()).toBe(0);
  expect(await row.textContent()).toContain(
    `archived: to reopen it, restore it first (spendgate archive restore ${MONTH})`,
  );
  const listed = page.locator(`[data-testid=archived-months] tr[data-archived="${MONTH}"]`);
  const text = (await listed.textContent())!;
  expect(text).toContain('2 tasks, 6 ledger entries'); // each: its hold, its release, its charge
  expect(text).toContain(path.join(ARCHIVE_DIR, MONTH));
  expect(text).toMatch(/ UTC by /);

  // Restored, the month is closed as before and may be reopened again.
  expect(await cli('archive', 'restore', MONTH)).toMatchObject({ code: 0 });
  await page.reload();
  await page.waitForSelector('[data-ready=months]');
  expect(await row.locator('.badge').textContent()).toBe('closed · final');
  expect(await row.locator('button', { hasText: 'reopen' }).count()).toBe(1);
  expect(await page.locator('[data-testid=archived-months]').count()).toBe(0);
});
