/**
 * Debian's Chromium driven by playwright-core, for the console's browser tests, bench:console and
 * the screenshots (`npx playwright install` cannot download browsers here). CHROMIUM_PATH
 * overrides /usr/bin/chromium.
 */
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** A headless Chromium with a fresh profile (Playwright makes one per launch and removes it). */
export function openBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    // No sandbox (root in CI), no GPU, and none of Chromium's own calls home.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** Every URL the page asks for outside `origin` (the proof that nothing is fetched from elsewhere). */
export function outsideRequests(page: Page, origin: string): string[] {
  const outside: string[] = [];
  page.on('request', (request) => {
    const url = request.url();
    if (!url.startsWith(`${origin}/`) && !url.startsWith('data:')) outside.push(url);
  });
  return outside;
}

/** Signs in through the console's form with a token, and waits for the overview. */
export async function signIn(page: Page, baseUrl: string, token: string): Promise<void> {
  await page.goto(`${baseUrl}/`);
  await page.fill('input[name=token]', token);
  await page.click('button[type=submit]');
  await page.waitForSelector('[data-testid=viewer]');
}
