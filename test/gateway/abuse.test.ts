/**
 * Abuse paths (decisions §5, §8), each through the real HTTP and GraphQL edges on real PostgreSQL:
 * webhook targets that are internal services (at creation, and after name resolution at
 * delivery), Slack markup from clients, an alert flood at zero cost, hostile report filters and
 * oversize headers, stalled connections, and /metrics in production.
 */
import { lookup } from 'node:dns/promises';
import { connect, type Socket } from 'node:net';
import { hostname } from 'node:os';
import type { Gateway } from '../../src/bootstrap.js';
import { slackText } from '../../src/alerts/webhook-message.js';
import { forbiddenAddress } from '../../src/alerts/webhook-target.js';
import { fakeVendor, type FakeVendor } from '../support/fake-vendor.js';
import { receiver } from '../support/receiver.js';
import {
  ADMIN,
  eventually,
  freshDatabase,
  gateway,
  graphql,
  http,
  projectWithKey,
  sql,
  submitGeneration,
} from '../support/harness.js';

const VENDOR_KEY = 'vk-abuse-0123456789';
const ENDPOINT = `mutation($url: String!, $f: WebhookFormat) { createWebhookEndpoint(url: $url, format: $f) { endpoint { id url } } }`;
const FAST = { WEBHOOK_POLL_MS: '20', WEBHOOK_RETRY_BASE_MS: '50', WEBHOOK_TIMEOUT_MS: '1000' };

describe('outside the sandbox', () => {
  let vendor: FakeVendor;
  let gw: Gateway;
  beforeAll(async () => {
    vendor = await fakeVendor();
    gw = await gateway(await freshDatabase(), {
      UPSTREAM_BASE_URL: vendor.url,
      UPSTREAM_API_KEY: VENDOR_KEY,
      POLLER_ENABLED: 'false',
      ...FAST,
    });
  });
  afterAll(async () => {
    await gw.close();
    await vendor.close();
  });

  test('webhook endpoints may not target internal services, in any spelling; a public https one may', async () => {
    for (const url of [
      'http://hooks.example.com/a',
      'https://127.0.0.1/a',
      'https://localhost/a',
      'https://api.localhost/a',
      'https://[::1]/a',
      'https://0.0.0.0/a',
      'https://127.1/a',
      'https://2130706433/a',
      'https://0x7f000001/a',
      'https://017700000001/a',
      'https://169.254.169.254/latest/meta-data',
      'https://[::ffff:127.0.0.1]/a',
      'https://[::ffff:a9fe:a9fe]/a',
      'https://10.0.0.5:5432/a',
      'https://192.168.1.1/a',
      'https://172.20.0.1/a',
      'https://[fd00:ec2::254]/a',
      'https://[fe80::1]/a',
      'https://100.64.0.1/a',
      'https://user:pw@hooks.example.com/a',
    ]) {
      const res = await graphql(gw, ADMIN, ENDPOINT, { url });
      expect({ url, code: res.body.errors?.[0]?.extensions?.code }).toEqual({ url, code: 'BAD_USER_INPUT' });
    }
    expect((await sql(gw, 'SELECT count(*)::int AS n FROM webhook_endpoint'))[0]!.n).toBe(0);
    const ok = await graphql(gw, ADMIN, ENDPOINT, { url: 'https://hooks.example.com/spendgate' });
    expect(ok.body.errors).toBeUndefined();
  });

  test('a name that resolves to an internal address is refused at delivery, after resolution; nothing reaches it; the log tells no socket detail', async () => {
    const name = hostname();
    const resolved = await lookup(name);
    expect(forbiddenAddress(resolved.address)).toBeDefined(); // this machine's own name is loopback (/etc/hosts)
    const hook = await receiver();
    try {
      const port = new URL(hook.url).port;
      await sql(gw, 'DELETE FROM webhook_endpoint WHERE true');
      const made = await graphql(gw, ADMIN, ENDPOINT, { url: `https://${name}:${port}/hook` });
      expect(made.body.errors).toBeUndefined();
      const silent = await graphql(gw, ADMIN, ENDPOINT, { url: 'https://1.1.1.1:9/hook' }); // unreachable from here
      expect(silent.body.errors).toBeUndefined();
      const { projectId, key } = await projectWithKey(gw);
      await graphql(
        gw,
        ADMIN,
        `
          mutation ($p: ID!) {
            setBudget(projectId: $p, unit: USD, limit: "0.01", period: MONTHLY, hard: true)
          }
        `,
        { p: projectId },
      );
      expect((await submitGeneration(gw, key, { model: 'seedream-4.0', prompt: 'p' })).status).toBe(402);
      const attempts = await eventually(
        async () => {
          const rows = await sql(
            gw,
            `SELECT e.url, a.error, a.latency_ms, a.status_code FROM webhook_attempt a JOIN webhook_delivery d ON d.id = a.delivery_id JOIN webhook_endpoint e ON e.id = d.endpoint_id ORDER BY a.id`,
          );
          return rows.length >= 2 && new Set(rows.map((r) => r.url)).size === 2 ? rows : undefined;
        },
        15_000,
        100,
      );
      const byUrl = (host: string) => attempts.find((a) => String(a.url).includes(host))!;
      expect(byUrl(name)).toMatchObject({
        status_code: null,
        latency_ms: 0,
        error: expect.stringMatching(
          /^refused: the target resolves to .* is a loopback, private, link-local or reserved address$/,
        ),
      });
      expect(byUrl('1.1.1.1')).toMatchObject({ status_code: null, latency_ms: 0, error: 'no HTTP answer' });
      expect(hook.received).toEqual([]);
    } finally {
      await hook.close();
    }
  });

  test('report filters with a NUL or control byte: a clear 400 on CSV and GraphQL, with a project key', async () => {
    const { key } = await projectWithKey(gw);
    for (const field of ['kinds', 'models', 'families', 'users', 'apiKeys']) {
      const csv = await http(
        `${gw.url}/reports/spend.csv?from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z&${field}=a%00b`,
        { key },
      );
      expect({ field, status: csv.status, body: csv.body }).toEqual({
        field,
        status: 400,
        body: { code: 4000, message: `${field}: must not contain control characters` },
      });
      const gql = await graphql(
        gw,
        key,
        `query($v: [String!]) { spendReport(from: "2026-11-01T00:00:00Z", to: "2026-12-01T00:00:00Z", ${field}: $v) { tasks } }`,
        { v: ['x\u0000y'] },
      );
      expect({ field, code: gql.body.errors?.[0]?.extensions?.code }).toEqual({ field, code: 'BAD_USER_INPUT' });
    }
  });

  test('headers over 16 KB: 431 in the one error shape', async () => {
    const res = await http(`${gw.url}/api-platform/v1/generations`, {
      key: 'x',
      body: {},
      headers: { 'x-padding': 'a'.repeat(17 * 1024) },
    });
    expect(res.status).toBe(431);
    expect(res.body).toEqual({ code: 4310, message: 'request headers are too large (at most 16 KB)' });
  });
});

describe('Slack and an alert flood (sandbox)', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await gateway(await freshDatabase(), { SIMULATOR_DELAY_MS: '600000', ...FAST });
  });
  afterAll(() => gw.close());

  test('Slack control sequences in client-sent text are escaped', () => {
    const user = '<!channel> <https://evil.example/login|re-enter your admin token> & more';
    const text = slackText({
      type: 'budget.exhausted',
      timestamp: '2026-11-25T00:00:00Z',
      data: {
        project: { id: 'p', name: '<!here> team' },
        budget: {
          scope: 'EACH_USER',
          scopeValue: null,
          user,
          unit: 'USD',
          period: 'MONTHLY',
          limit: '1',
          spent: '1',
          held: '0',
          remaining: '0',
        },
      },
    });
    expect(text).not.toMatch(/<!|<https/);
    expect(text).toContain('&lt;!channel&gt; &lt;https://evil.example/login|re-enter your admin token&gt; &amp; more');
    expect(text).toContain('&lt;!here&gt; team');
  });

  test('500 over-limit requests from new end users: all 402, at most 11 events (10 users, then one that says the rest are not announced), escaped in Slack', async () => {
    const hook = await receiver();
    try {
      await graphql(gw, ADMIN, ENDPOINT, { url: hook.url, f: 'SLACK' });
      const { projectId, key } = await projectWithKey(gw);
      const set = await graphql(
        gw,
        ADMIN,
        `
          mutation ($p: ID!) {
            setBudget(projectId: $p, unit: USD, limit: "0.01", period: MONTHLY, hard: true, scope: EACH_USER)
          }
        `,
        { p: projectId },
      );
      expect(set.body.errors).toBeUndefined();
      const evil = '<!channel> <https://evil.example/login|re-enter your admin token>';
      const results = [];
      for (let i = 0; i < 500; i += 50) {
        results.push(
          ...(await Promise.all(
            Array.from({ length: 50 }, (_, j) =>
              submitGeneration(
                gw,
                key,
                { model: 'seedream-4.0', prompt: 'p' },
                { 'x-spendgate-user': i + j === 0 ? evil : `flood-${i + j}` },
              ),
            ),
          )),
        );
      }
      expect(new Set(results.map((r) => r.status))).toEqual(new Set([402]));
      await new Promise((r) => setTimeout(r, 500));
      const events = await sql(
        gw,
        `SELECT cause, payload FROM outbox_event WHERE type = 'budget.exhausted' AND project_id = $1`,
        [projectId],
      );
      expect(events.length).toBe(11);
      expect(events.filter((e) => String(e.cause).endsWith(':*'))).toHaveLength(1);
      expect(JSON.parse(String(events.find((e) => String(e.cause).endsWith(':*'))!.payload)).data).toMatchObject({
        capped: true,
        announcedUsers: 10,
      });
      await eventually(async () => hook.received.length === 11, 10_000);
      const texts = hook.received.map((r) => (JSON.parse(r.body) as { text: string }).text);
      expect(texts.join('\n')).not.toMatch(/<!channel>|<https:/);
      expect(texts.some((t) => t.includes('&lt;!channel&gt;'))).toBe(
        events.some((e) => String(e.cause).endsWith(evil)),
      );
      expect(texts.filter((t) => t.includes('not announced'))).toHaveLength(1);
    } finally {
      await hook.close();
    }
  });
});

describe('stalled connections and unauthenticated clients', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await gateway(await freshDatabase(), {
      REQUEST_TIMEOUT_MS: '1000',
      UPSTREAM_TIMEOUT_MS: '500',
      UPSTREAM_CONNECT_TIMEOUT_MS: '200',
      RECORD_RETRY_WINDOW_MS: '200',
      MAX_UNAUTHENTICATED_CONNECTIONS_PER_ADDRESS: '300',
    });
  });
  afterAll(() => gw.close());

  const open = (lines: string): Promise<{ socket: Socket; closed: Promise<number> }> =>
    new Promise((resolve, reject) => {
      const { port } = new URL(gw.url);
      const socket = connect(Number(port), '127.0.0.1', () => {
        socket.write(lines);
        const started = Date.now();
        resolve({ socket, closed: new Promise((r) => socket.on('close', () => r(Date.now() - started))) });
      });
      socket.resume(); // read what the server says (a 408), so that its close is seen
      socket.on('error', () => {});
      socket.once('error', reject);
    });

  test('200 stalled bodies and 50 stalled headers without a key are all closed within seconds', async () => {
    const { key } = await projectWithKey(gw);
    const bodies = await Promise.all(
      Array.from({ length: 200 }, () =>
        open(
          `POST /api-platform/v1/generations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"model":`,
        ),
      ),
    );
    const headers = await Promise.all(
      Array.from({ length: 50 }, () => open('POST /api-platform/v1/generations HTTP/1.1\r\nHost: x\r\nX-Slow: ')),
    );
    const times = await Promise.race([
      Promise.all([...bodies, ...headers].map((c) => c.closed)),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('still open after 10 s')), 10_000)),
    ]);
    expect(Math.max(...times)).toBeLessThan(8_000);
    // The gateway still answers afterwards.
    expect((await submitGeneration(gw, key, { model: 'seedream-4.0', prompt: 'p' })).status).toBe(200);
  }, 20_000);

  test('one address may not hold more unauthenticated connections than the limit; proven ones do not count', async () => {
    const limited = await gateway(gw.databaseUrl, {
      MAX_UNAUTHENTICATED_CONNECTIONS_PER_ADDRESS: '20',
      REQUEST_TIMEOUT_MS: '60000',
    });
    try {
      const { port } = new URL(limited.url);
      const idle = await Promise.all(
        Array.from(
          { length: 30 },
          () =>
            new Promise<{ socket: Socket; closedEarly: boolean }>((resolve) => {
              const socket = connect(Number(port), '127.0.0.1');
              let closedEarly = false;
              socket.resume();
              socket.on('error', () => {});
              socket.on('close', () => (closedEarly = true));
              socket.on('connect', () =>
                setTimeout(
                  () =>
                    resolve({
                      socket,
                      get closedEarly() {
                        return closedEarly;
                      },
                    } as { socket: Socket; closedEarly: boolean }),
                  300,
                ),
              );
            }),
        ),
      );
      expect(idle.filter((c) => c.closedEarly)).toHaveLength(10);
      for (const c of idle) c.socket.destroy();
      await new Promise((r) => setTimeout(r, 100));
      const { key } = await projectWithKey(limited);
      expect((await submitGeneration(limited, key, { model: 'seedream-4.0', prompt: 'p' })).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});

test('/metrics and /metrics/books in production: closed without METRICS_TOKEN, open only with it', async () => {
  const vendor = await fakeVendor();
  const url = await freshDatabase();
  const env = {
    UPSTREAM_BASE_URL: vendor.url,
    UPSTREAM_API_KEY: VENDOR_KEY,
    NODE_ENV: 'production',
    POLLER_ENABLED: 'false',
  };
  const closed = await gateway(url, env);
  const open = await gateway(url, { ...env, METRICS_TOKEN: 'metrics-token-0123456789' });
  try {
    // the books (/metrics/books, served by the reads worker) keep the same rule as the instance's own metrics
    for (const path of ['/metrics', '/metrics/books']) {
      expect(await http(`${closed.url}${path}`)).toMatchObject({ status: 403, body: { code: 4030 } });
      expect((await http(`${open.url}${path}`)).status).toBe(401);
      expect((await http(`${open.url}${path}`, { key: 'wrong-token-0123456789' })).status).toBe(401);
      const scraped = await http(`${open.url}${path}`, { key: 'metrics-token-0123456789' });
      expect(scraped.status).toBe(200);
      expect(scraped.text).toMatch(/^# HELP /m);
    }
  } finally {
    await Promise.all([closed.close(), open.close()]);
    await vendor.close();
  }
});
