/**
 * `npm run screenshots`: starts a sandbox gateway (`npm start` with no upstream: the built-in
 * simulator), fills it through the public API the way the README does (projects, keys with tags,
 * budgets, traffic with end users and tags, a refusal, a task under review, a webhook endpoint, a
 * new price-book version), and photographs each console page into docs/screenshots/.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openBrowser } from '../bench/browser.js';

const OUT = path.join('docs', 'screenshots');
const ADMIN = 'sandbox-admin-token-for-screenshots';
const dataDir = mkdtempSync(path.join(tmpdir(), 'spendgate-shots-'));
const gateway = spawn(process.execPath, ['dist/src/main.js'], {
  env: {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: '0',
    ADMIN_TOKEN: ADMIN,
    SIMULATOR_DELAY_MS: '300',
    POLL_INTERVAL_MS: '200',
    UPSTREAM_TIMEOUT_MS: '1000',
    LOG_LEVEL: 'warn',
  },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const said = (pattern: RegExp) =>
  new Promise<string>((resolve) => {
    let out = '';
    gateway.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = pattern.exec(out);
      if (m) resolve(m[1]!);
    });
  });
const simulatorSaid = said(/built-in upstream simulator at (\S+)/);
const url = await said(/listening on (\S+)/);
const simulator = await simulatorSaid;

const post = async (p: string, token: string, body: unknown, headers: Record<string, string> = {}) => {
  const res = await fetch(`${url}${p}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { data: Record<string, string>; errors?: unknown[] } };
};
const gql = async (query: string, variables: Record<string, unknown> = {}) => {
  const { body } = await post('/graphql', ADMIN, { query, variables });
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data;
};
const image = (key: string, user: string, tags: string, resolution = '2K') =>
  post(
    '/api-platform/v1/generations',
    key,
    { model: 'seedream-4.0', prompt: 'a red fox in the snow', resolution },
    { 'x-spendgate-user': user, 'x-spendgate-tags': tags },
  );
const chat = (key: string, user: string, tags: string) =>
  post(
    '/api-platform/v1/chat/completions',
    key,
    {
      model: 'glm-5.3',
      messages: [{ role: 'user', content: 'Summarize our refund policy in two lines.' }],
      max_tokens: 400,
    },
    { 'x-spendgate-user': user, 'x-spendgate-tags': tags },
  );

const receiver = createServer((req, res) => req.resume().on('end', () => res.writeHead(204).end()));
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
const browser = await openBrowser();
try {
  const search = (await gql('mutation { createProject(name: "search-team") }')).createProject;
  const support = (await gql('mutation { createProject(name: "support-bot") }')).createProject;
  const searchKey = (
    await gql('mutation($p: ID!) { issueApiKey(projectId: $p, tags: ["team=search"]) }', { p: search })
  ).issueApiKey;
  const supportKey = (
    await gql('mutation($p: ID!) { issueApiKey(projectId: $p, tags: ["team=support"]) }', { p: support })
  ).issueApiKey;
  await gql(
    'mutation($p: ID!) { setBudget(projectId: $p, unit: USD, limit: "2", period: MONTHLY, hard: true, thresholds: [50, 80]) }',
    { p: search },
  );
  await gql(
    'mutation($p: ID!) { setBudget(projectId: $p, unit: USD, limit: "0.3", period: DAILY, hard: true, scope: EACH_USER) }',
    { p: search },
  );
  await gql(
    'mutation($p: ID!) { setBudget(projectId: $p, unit: CREDITS, limit: "50000", period: MONTHLY, hard: false, thresholds: [50, 80, 100]) }',
    { p: support },
  );
  const port = (receiver.address() as { port: number }).port;
  await gql('mutation($u: String!) { createWebhookEndpoint(url: $u) { secret } }', {
    u: `http://127.0.0.1:${port}/spendgate`,
  });

  for (let i = 0; i < 12; i++)
    await image(
      searchKey,
      `customer-${100 + (i % 4)}`,
      `feature=${i % 3 ? 'thumbnails' : 'covers'}`,
      i % 2 ? '2K' : '1K',
    );
  for (let i = 0; i < 6; i++) await image(searchKey, 'customer-100', 'feature=covers'); // runs into its each-user limit
  for (let i = 0; i < 10; i++) await chat(supportKey, `agent-${i % 3}`, 'feature=replies');
  await fetch(`${simulator}/__sim/config`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ resetRate: 1 }),
  });
  await image(searchKey, 'customer-103', 'feature=covers'); // the vendor's answer is lost: a task under review
  await fetch(`${simulator}/__sim/config`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ resetRate: 0 }),
  });
  await gql(
    'mutation($at: DateTime!) { publishPrices(effectiveAt: $at, note: "seedream 2K up", rates: [{ model: "seedream-4.0", component: "image", key: "2K", rate: "0.07", unit: USD }]) }',
    { at: new Date(Date.now() + 86_400_000).toISOString() },
  );
  await new Promise((r) => setTimeout(r, 3_000)); // tasks settle, webhooks go out

  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, deviceScaleFactor: 1 });
  await context.request.post(`${url}/auth/token`, { data: { token: ADMIN } }); // the session cookie, as signing in sets it
  const page = await context.newPage();
  const shoot = async (name: string, route: string, ready: string, before?: () => Promise<void>) => {
    await page.goto(`${url}/console/#/${route}`);
    await before?.();
    await page.waitForSelector(ready);
    await page.waitForTimeout(300);
    await page.screenshot({ path: path.join(OUT, `${name}.png`), fullPage: true });
    console.log(`wrote ${path.join(OUT, `${name}.png`)}`);
  };
  await shoot('overview', 'overview', '[data-compared=yes] [data-testid=chart-USD][data-drawn=yes]');
  await shoot('budgets', 'budgets', '[data-ready=budgets] article.budget', async () => {
    await page.selectOption('select[name=project]', search);
  });
  await shoot('tasks', 'tasks', '[data-ready=tasks]');
  await shoot('review', 'review', '[data-ready=review]');
  const review = await page.$('tr[data-testid^=task-] a');
  if (review) await shoot('task', `tasks/${encodeURIComponent((await review.textContent())!)}`, '[data-ready=task]');
  await shoot('prices', 'prices', '[data-ready=prices]');
  await shoot('alerts', 'alerts', '[data-ready=alerts]');
  await gql('mutation { invitePerson(email: "finance@example.com", role: FINANCE) { id } }');
  await gql('mutation($p: [ID!]) { invitePerson(email: "lead@example.com", role: LEAD, projectIds: $p) { id } }', {
    p: [search],
  });
  await shoot('people', 'people', '[data-ready=people]');
  await shoot('audit', 'audit', '[data-ready=audit]');
  await shoot('months', 'months', '[data-ready=months]');
  await page.goto(`${url}/`);
  await context.close();
  const signIn = await browser.newPage({ viewport: { width: 1280, height: 700 } });
  await signIn.goto(`${url}/`);
  await signIn.screenshot({ path: path.join(OUT, 'sign-in.png') });
} finally {
  await browser.close();
  receiver.close();
  gateway.kill('SIGTERM');
  await new Promise((r) => gateway.once('exit', r));
  rmSync(dataDir, { recursive: true, force: true });
}
