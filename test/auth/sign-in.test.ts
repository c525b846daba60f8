/**
 * Signing in (decisions §11) in a real browser: a real OpenID provider on loopback (node-oidc-provider) and Debian's
 * Chromium through Playwright. An invited person signs in through the provider's login page and
 * lands in the console with their role; an uninvited one gets a readable refusal; a tampered
 * state, a replayed code and a wrong nonce are refused; sign-out ends the server session. Then the
 * role-aware console: an owner's People, Tokens and Audit pages, and what a lead is not shown.
 */
import type { Browser, BrowserContext, Page, Route } from 'playwright-core';
import { openBrowser, signIn } from '../../bench/browser.js';
import type { Gateway } from '../../src/bootstrap.js';
import { freePort } from '../../src/database/embedded.js';
import { PeopleService } from '../../src/people/people.service.js';
import { TokensService } from '../../src/people/tokens.service.js';
import { identityProvider, type IdentityProvider } from '../support/identity-provider.js';
import { freshDatabase, gateway, projectWithKey, sql } from '../support/harness.js';

let gw: Gateway;
let idp: IdentityProvider;
let browser: Browser;
let projectId: string;

beforeAll(async () => {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  idp = await identityProvider(url);
  gw = await gateway(await freshDatabase(), {
    PORT: String(port),
    PUBLIC_URL: url,
    OIDC_ISSUER: idp.issuer,
    OIDC_CLIENT_ID: idp.clientId,
    OIDC_CLIENT_SECRET: idp.clientSecret,
  });
  projectId = (await projectWithKey(gw, 'search')).projectId;
  await gw.app.get(PeopleService).invite('ann@example.com', { role: 'FINANCE', projectIds: null }, 'test');
  browser = await openBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await gw?.close();
  await idp?.close();
});

/** From the console's sign-in page through the provider's login and consent pages; stops where the browser lands. */
async function throughProvider(
  page: Page,
  login: string,
  beforeLogin?: () => Promise<void>,
  held = false,
): Promise<void> {
  await page.goto(`${gw.url}/console/`);
  await page.click('[data-testid=sign-in-oidc]');
  await page.waitForSelector('input[name=login]');
  await beforeLogin?.();
  await page.fill('input[name=login]', login);
  await page.fill('input[name=password]', 'any password');
  await page.click('button[type=submit]');
  await page.waitForSelector('button:has-text("Continue")');
  await page.click('button:has-text("Continue")');
  if (held) await page.waitForSelector('text=held by the test');
}

const refusal = async (page: Page) => (await page.waitForSelector('[data-testid=refusal]')).textContent();

test('an invited person signs in through the provider and lands in the console with their role; sign-out ends the session on the server', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await throughProvider(page, 'ann');
  await page.waitForSelector('[data-testid=viewer]');
  expect(page.url()).toBe(`${gw.url}/console/`);
  expect(await page.textContent('[data-testid=viewer]')).toBe('ann@example.com · finance');
  const nav = await page.$$eval('nav a', (as) => as.map((a) => a.textContent));
  expect(nav).toEqual([
    'Overview',
    'Budgets',
    'Tasks',
    'Review queue',
    'Price book',
    'Alerts',
    'Months',
    'Reconciliation',
    'Tokens',
    'Audit',
  ]);
  const [person] = await sql(gw, `SELECT state, display_name, oidc_issuer FROM person WHERE email = 'ann@example.com'`);
  expect(person).toEqual({ state: 'active', display_name: 'Ann Analyst', oidc_issuer: idp.issuer });
  expect((await sql(gw, `SELECT actor FROM audit_record WHERE action = 'sign-in.oidc'`)).map((r) => r.actor)).toEqual([
    'ann@example.com',
  ]);
  // No secret in the URL at any point after the callback, and the session is an HttpOnly cookie.
  expect((await context.cookies()).find((c) => c.name === 'sg_session')).toMatchObject({
    httpOnly: true,
    sameSite: 'Strict',
  });

  await page.click('text=Sign out');
  await page.waitForSelector('[data-testid=sign-in-oidc]');
  expect(
    (
      await sql(
        gw,
        `SELECT count(*)::int AS n FROM session s JOIN person p ON p.id = s.person_id WHERE p.email = 'ann@example.com' AND s.ended_at IS NULL`,
      )
    )[0]!.n,
  ).toBe(0);
  await page.reload();
  await page.waitForSelector('[data-testid=sign-in-oidc]');
  expect(await page.$('[data-testid=viewer]')).toBeNull();
  await context.close();
}, 60_000);

test('a person nobody invited is refused with a readable page, and the refusal is audited', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await throughProvider(page, 'eve');
  expect(await refusal(page)).toBe('eve@elsewhere.example was not invited to spendgate: ask an owner to invite you');
  expect(await page.title()).toBe('spendgate: not signed in');
  expect((await context.cookies()).find((c) => c.name === 'sg_session')).toBeUndefined();
  expect((await sql(gw, `SELECT count(*)::int AS n FROM person WHERE email = 'eve@elsewhere.example'`))[0]!.n).toBe(0);
  expect(
    (await sql(gw, `SELECT actor FROM audit_record WHERE action = 'sign-in.failed' ORDER BY seq DESC LIMIT 1`))[0]!
      .actor,
  ).toBe('eve@elsewhere.example');
  await context.close();
}, 60_000);

/**
 * Lets the browser go through the provider, but holds its final redirect to the gateway's
 * callback: its URL is returned and the gateway never sees it. (Playwright does not route the
 * requests of a redirect, so the provider's answers are fetched here and their redirects looked at.)
 */
async function heldCallback(context: BrowserContext, start: () => Promise<unknown>): Promise<URL> {
  let held: string | undefined;
  const follow = async (route: Route) => {
    let response = await route.fetch({ maxRedirects: 0 });
    // The provider's own redirects, followed here (cookies are the context's) until one leads to the gateway.
    for (let hops = 0; hops < 10; hops++) {
      const location = response.headers().location;
      if (!location || response.status() < 300 || response.status() > 399) break;
      const next = new URL(location, response.url()).toString();
      if (next.startsWith(`${gw.url}/auth/callback`)) {
        held = next;
        return route.fulfill({ status: 200, contentType: 'text/plain', body: 'held by the test' });
      }
      if (!next.startsWith(idp.issuer)) break;
      response = await context.request.get(next, { maxRedirects: 0 });
    }
    return route.fulfill({ response });
  };
  await context.route(`${idp.issuer}/**`, follow);
  await context.route(`${gw.url}/auth/login`, follow);
  await start();
  for (let i = 0; i < 200 && !held; i++) await new Promise((r) => setTimeout(r, 25));
  await context.unrouteAll();
  return new URL(held!);
}

test('a tampered state is refused', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const callback = await heldCallback(context, () => throughProvider(page, 'ann', undefined, true));
  callback.searchParams.set('state', `${callback.searchParams.get('state')}x`);
  await page.goto(callback.toString());
  expect(await refusal(page)).toMatch(/was not started from this browser/);
  expect((await context.cookies()).find((c) => c.name === 'sg_session')).toBeUndefined();
  await context.close();
}, 60_000);

test('a replayed code is refused: the same callback twice, and the old code under a new state', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const first = await heldCallback(context, () => throughProvider(page, 'ann', undefined, true));
  await page.goto(first.toString());
  await page.waitForSelector('[data-testid=viewer]');
  // The same callback again: its sign-in was used.
  await page.goto(first.toString());
  expect(await refusal(page)).toMatch(/state does not match|already used/);
  // A new sign-in's state (the provider remembers ann, so it answers at once), with the old code.
  const second = await heldCallback(context, () => page.goto(`${gw.url}/auth/login`));
  second.searchParams.set('code', first.searchParams.get('code')!);
  await page.goto(second.toString());
  expect(await refusal(page)).toMatch(/your identity provider's answer was refused \(invalid_grant\)/);
  await context.close();
}, 60_000);

test("an ID token with a nonce other than the sign-in's is refused", async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await throughProvider(page, 'ann', async () => {
    // The provider will sign the nonce it was sent; the gateway now expects another one.
    const state = (await context.cookies()).find((c) => c.name === 'sg_oidc_state')!.value;
    expect(
      (
        await sql(
          gw,
          `UPDATE sign_in_attempt SET nonce = 'a-nonce-from-another-sign-in' WHERE state = $1 RETURNING state`,
          [state],
        )
      ).length,
    ).toBe(1);
  });
  expect(await refusal(page)).toMatch(/your identity provider's answer was refused/);
  expect((await context.cookies()).find((c) => c.name === 'sg_session')).toBeUndefined();
  await context.close();
}, 60_000);

test('the console follows the role: an owner invites, makes a token and reads the audit trail; a lead sees none of that', async () => {
  const people = gw.app.get(PeopleService);
  const owner = await people.invite('olga@example.com', { role: 'OWNER', projectIds: null }, 'test');
  const ownerToken = (await gw.app.get(TokensService).create({ personId: owner.id }, 'browser')).secret;
  const context = await browser.newContext();
  const page = await context.newPage();
  page.on('dialog', (d) => void d.accept());
  await signIn(page, gw.url, ownerToken);
  expect(await page.textContent('[data-testid=viewer]')).toBe('olga@example.com · owner');

  // People: invite a lead of one project.
  await page.goto(`${gw.url}/console/#/people`);
  await page.waitForSelector('[data-ready=people]');
  await page.fill('input[name=email]', 'leo@example.com');
  await page.selectOption('select[name=emailRole]', 'LEAD');
  await page.check(`input[name=emailProject][value="${projectId}"]`);
  await page.click('form[aria-label="Invite a person"] button[type=submit]');
  await page.waitForSelector('tr[data-email="leo@example.com"]');
  expect(await page.textContent('tr[data-email="leo@example.com"]')).toContain('lead');
  expect(await page.textContent('tr[data-email="leo@example.com"]')).toContain('search');

  // Tokens: one made, its secret shown once and working, then revoked.
  await page.goto(`${gw.url}/console/#/tokens`);
  await page.waitForSelector('[data-ready=tokens]');
  await page.fill('input[name=tokenName]', 'ci');
  await page.click('button:has-text("Create token")');
  const secret = await (await page.waitForSelector('[data-testid=new-secret] input')).inputValue();
  expect(secret).toMatch(/^sgp_[0-9a-f]{12}_/);
  const asToken = () =>
    fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
      body: JSON.stringify({ query: '{ viewer { email } }' }),
    }).then((r) => r.json());
  expect(await asToken()).toEqual({ data: { viewer: { email: 'olga@example.com' } } });
  await page.click('text=I have copied it');
  await page.click(`[data-testid=tokens] tr:has-text("ci") button:has-text("revoke")`);
  await page.waitForSelector(`[data-testid=tokens] tr:has-text("ci") >> text=revoked`);
  expect(((await asToken()) as { errors: Array<{ extensions: { code: string } }> }).errors[0]!.extensions.code).toBe(
    'UNAUTHENTICATED',
  );

  // Audit: filtered to invitations, the lead's invitation by Olga; the CSV has the same filter.
  await page.goto(`${gw.url}/console/#/audit`);
  await page.waitForSelector('[data-ready=audit]');
  await page.fill('input[name=action]', 'person.invite');
  await page.click('form button[type=submit]');
  const onlyInvites = () =>
    page.$$eval(
      '[data-testid=audit] tbody tr',
      (rows) => rows.length > 0 && rows.every((r) => r.textContent!.includes('person.invite')),
    );
  for (let i = 0; i < 100 && !(await onlyInvites()); i++) await page.waitForTimeout(50);
  expect(await onlyInvites()).toBe(true);
  const row = await page.textContent('[data-testid=audit] tbody tr:first-child');
  expect(row).toContain('olga@example.com');
  expect(row).toContain('leo@example.com');
  const href = await page.getAttribute('[data-testid=audit-csv]', 'href');
  expect(href).toBe('/reports/audit.csv?action=person.invite');
  const csv = await page.evaluate(async (h) => (await fetch(h!)).text(), href);
  expect(csv.split('\n')[0]).toMatch(/^seq,at,actor_kind,actor,action/);
  expect(csv).toContain('leo@example.com');
  for (const token of ['token.create', 'token.revoke'])
    expect((await sql(gw, 'SELECT actor FROM audit_record WHERE action = $1', [token]))[0]!.actor).toBe(
      'olga@example.com',
    );
  await context.close();

  // The lead: no People page in the menu, and the page itself says so.
  const leo = await people.invite('leo2@example.com', { role: 'LEAD', projectIds: [projectId] }, 'test');
  const leadContext = await browser.newContext();
  const leadPage = await leadContext.newPage();
  await signIn(leadPage, gw.url, (await gw.app.get(TokensService).create({ personId: leo.id }, 'browser')).secret);
  expect(await leadPage.textContent('[data-testid=viewer]')).toBe('leo2@example.com · lead of 1 project');
  expect(await leadPage.$('nav a[href="#/people"]')).toBeNull();
  expect(await leadPage.$('nav a[href="#/audit"]')).not.toBeNull();
  await leadPage.goto(`${gw.url}/console/#/people`);
  await leadPage.waitForSelector('[data-testid=not-allowed]');
  await leadPage.goto(`${gw.url}/console/#/prices`);
  await leadPage.waitForSelector('[data-ready=prices]');
  expect(await leadPage.$('form.publish')).toBeNull();
  await leadContext.close();
}, 90_000);
