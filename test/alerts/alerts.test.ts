/**
 * Alerts (decisions §8) through the running service: events written with their cause,
 * one per cause across two instances, delivered by the dispatcher with Standard Webhooks
 * signatures to a real HTTP receiver here, retried with the same webhook-id, surviving SIGKILL,
 * never slowing submissions; Slack text; GraphQL endpoints and deliveries.
 */
import { Webhook } from 'standardwebhooks';
import type { Gateway } from '../../src/bootstrap.js';
import { TaskStore } from '../../src/tasks/task-store.js';
import { imageBody } from '../support/builders.js';
import { receiver } from '../support/receiver.js';
import { heldTask } from '../support/builders.js';
import {
  ADMIN,
  eventually,
  freshDatabase,
  gateway,
  graphql,
  http,
  pollTask,
  projectWithKey,
  spawnGateway,
  sql,
  submitChat,
  submitGeneration,
} from '../support/harness.js';

async function createEndpoint(gw: Gateway, url: string, extra: Record<string, unknown> = {}) {
  const res = await graphql<{ createWebhookEndpoint: { endpoint: { id: string }; secret: string } }>(
    gw,
    ADMIN,
    `
      mutation ($url: String!, $events: [String!], $p: ID, $f: WebhookFormat) {
        createWebhookEndpoint(url: $url, events: $events, projectId: $p, format: $f) {
          endpoint {
            id
            url
            events
            format
            enabled
          }
          secret
        }
      }
    `,
    { url, ...extra },
  );
  expect(res.body.errors).toBeUndefined();
  return res.body.data.createWebhookEndpoint;
}

async function setBudget(gw: Gateway, projectId: string, limit: string, hard: boolean, thresholds: number[]) {
  const res = await graphql(
    gw,
    ADMIN,
    `
      mutation ($p: ID!, $l: Decimal!, $h: Boolean!, $t: [Int!]) {
        setBudget(projectId: $p, unit: USD, limit: $l, period: MONTHLY, hard: $h, thresholds: $t)
      }
    `,
    { p: projectId, l: limit, h: hard, t: thresholds },
  );
  expect(res.body.errors).toBeUndefined();
}

const FAST = { WEBHOOK_POLL_MS: '20', WEBHOOK_RETRY_BASE_MS: '50', WEBHOOK_TIMEOUT_MS: '1000' };
const IMAGE = imageBody(); // 0.04 USD

test('200 concurrent submissions over two instances cross 50/80/100 % once each: three signed events, delivered; a hard budget says exhausted once', async () => {
  const url = await freshDatabase();
  const a = await gateway(url, { SIMULATOR_DELAY_MS: '600000', ...FAST });
  const b = await gateway(url, { SIMULATOR_DELAY_MS: '600000', POLLER_ENABLED: 'false', ...FAST });
  const hook = await receiver();
  try {
    const soft = await projectWithKey(a);
    const hard = await projectWithKey(a);
    const { secret } = await createEndpoint(a, hook.url);
    await setBudget(a, soft.projectId, '4.00', false, [50, 80, 100]); // 100 submissions reach it; 200 go past
    await setBudget(a, hard.projectId, '1.00', true, [100]);

    const results = await Promise.all([
      ...Array.from({ length: 200 }, (_, i) => submitGeneration(i % 2 ? a : b, soft.key, IMAGE)),
      ...Array.from({ length: 60 }, (_, i) => submitGeneration(i % 2 ? a : b, hard.key, IMAGE)),
    ]);
    expect(results.slice(0, 200).every((r) => r.status === 200)).toBe(true);
    expect(results.slice(200).filter((r) => r.status === 200)).toHaveLength(25);

    const events = await sql<{ type: string; payload: string }>(
      a,
      'SELECT type, payload FROM outbox_event ORDER BY created_at, id',
    );
    const crossed = events
      .filter((e) => e.type === 'budget.threshold_crossed')
      .map((e) => JSON.parse(e.payload) as { data: { threshold: number; project: { id: string } } });
    expect(
      crossed
        .filter((e) => e.data.project.id === soft.projectId)
        .map((e) => e.data.threshold)
        .sort((x, y) => x - y),
    ).toEqual([50, 80, 100]);
    expect(crossed.filter((e) => e.data.project.id === hard.projectId).map((e) => e.data.threshold)).toEqual([100]);
    // The exhaustion is written just after its refusal: once, though 35 requests were refused.
    await eventually(
      async () => (await sql(a, `SELECT 1 FROM outbox_event WHERE type = 'budget.exhausted'`)).length === 1,
    );
    expect(await sql(a, 'SELECT count(*)::int AS n FROM outbox_event')).toEqual([{ n: 5 }]);

    // Each delivered once (no retry was needed), each signature verified by the library.
    await eventually(async () => new Set(hook.received.map((r) => r.headers['webhook-id'])).size === 5, 15_000);
    const verifier = new Webhook(secret);
    for (const r of hook.received) {
      const event = verifier.verify(r.body, r.headers as Record<string, string>) as {
        type: string;
        data: { eventId: string };
      };
      expect(event.data.eventId).toBe(r.headers['webhook-id']);
    }
    expect(() =>
      verifier.verify(
        hook.received[0]!.body.replace('budget', 'Budget'),
        hook.received[0]!.headers as Record<string, string>,
      ),
    ).toThrow();
    const exhausted = JSON.parse(hook.received.find((r) => JSON.parse(r.body).type === 'budget.exhausted')!.body);
    expect(exhausted.data.budget).toMatchObject({
      scope: 'PROJECT',
      unit: 'USD',
      period: 'MONTHLY',
      hard: true,
      limit: '1',
      spent: '0',
      held: '1.00',
      remaining: '0.00',
    });
    // The receiver answered before the dispatcher recorded it: wait for the records.
    await eventually(
      async () => (await sql(a, `SELECT 1 FROM webhook_delivery WHERE status = 'DELIVERED'`)).length === 5,
    );
    const deliveries = await graphql<{
      webhookDeliveries: {
        edges: Array<{ node: { status: string; attempts: number; log: Array<{ statusCode: number }> } }>;
      };
    }>(
      a,
      ADMIN,
      '{ webhookDeliveries(first: 10) { edges { node { status attempts eventType log { statusCode latencyMs } } } } }',
    );
    expect(
      deliveries.body.data.webhookDeliveries.edges.map((e) => [
        e.node.status,
        e.node.attempts,
        e.node.log.map((l) => l.statusCode),
      ]),
    ).toEqual(Array.from({ length: 5 }, () => ['DELIVERED', 1, [200]]));
  } finally {
    await hook.close();
    await b.close();
    await a.close();
  }
});

describe('delivery', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await gateway(await freshDatabase(), { SIMULATOR_DELAY_MS: '600000', ...FAST });
  });
  afterAll(() => gw.close());

  test('a receiver that fails three times gets it on the fourth, with the same webhook-id; every attempt is logged', async () => {
    const hook = await receiver((n) => (n <= 3 ? 500 : 204));
    try {
      const { projectId, key } = await projectWithKey(gw);
      const endpoint = await createEndpoint(gw, hook.url, { p: projectId });
      await setBudget(gw, projectId, '0.04', false, [100]);
      expect((await submitGeneration(gw, key, IMAGE)).status).toBe(200);
      await eventually(async () => hook.received.length === 4, 15_000);
      expect(new Set(hook.received.map((r) => r.headers['webhook-id'])).size).toBe(1);
      const res = await graphql<{
        webhookDeliveries: {
          edges: Array<{
            node: {
              id: string;
              status: string;
              attempts: number;
              log: Array<{ statusCode: number; error: string | null }>;
            };
          }>;
        };
      }>(
        gw,
        ADMIN,
        'query($e: ID) { webhookDeliveries(endpointId: $e) { edges { node { id status attempts log { statusCode error } } } } }',
        { e: endpoint.endpoint.id },
      );
      const [delivery] = res.body.data.webhookDeliveries.edges.map((e) => e.node);
      await eventually(
        async () =>
          (await sql(gw, `SELECT 1 FROM webhook_delivery WHERE id = $1 AND status = 'DELIVERED'`, [delivery!.id]))
            .length === 1,
      );
      const log = await sql(gw, 'SELECT status_code, error FROM webhook_attempt WHERE delivery_id = $1 ORDER BY id', [
        delivery!.id,
      ]);
      expect(log).toEqual([
        { status_code: 500, error: 'HTTP 500' },
        { status_code: 500, error: 'HTTP 500' },
        { status_code: 500, error: 'HTTP 500' },
        { status_code: 204, error: null },
      ]);
      // Sent again on request, still the same event id.
      const again = await graphql(gw, ADMIN, 'mutation($d: ID!) { redeliverWebhook(deliveryId: $d) }', {
        d: delivery!.id,
      });
      expect(again.body.data).toEqual({ redeliverWebhook: true });
      await eventually(async () => hook.received.length === 5, 10_000);
      expect(hook.received[4]!.headers['webhook-id']).toBe(hook.received[0]!.headers['webhook-id']);
      const metrics = await (await fetch(`${gw.url}/metrics`)).text();
      expect(metrics).toMatch(/spendgate_webhook_deliveries_total\{outcome="retried"\} 3/);
      expect(metrics).toMatch(/spendgate_webhook_outbox_lag_seconds \d/);
    } finally {
      await hook.close();
    }
  });

  test('an overrun and an unknown outcome each make their event; a Slack endpoint gets text a person reads', async () => {
    const slack = await receiver();
    try {
      const { projectId, key } = await projectWithKey(gw);
      await createEndpoint(gw, slack.url, { p: projectId, f: 'SLACK', events: ['task.overrun', 'task.needs_review'] });
      const submitted = await submitChat(gw, key, {
        model: 'gemini-3.8-flash',
        messages: [{ role: 'user', content: 'think hard' }],
        max_tokens: 16,
      });
      const taskId = submitted.body.data.taskId;
      await http(`${gw.simulatorUrl}/__sim/tasks/${taskId}/complete`, {
        body: {
          status: 'ready',
          usage: { promptTokenCount: 20, candidatesTokenCount: 16, thoughtsTokenCount: 24_000 },
        },
      });
      expect((await pollTask(gw, key, taskId)).status).toBe(200);
      // Held an hour ago by a gateway that stopped before the vendor answered. Swept here or by this
      // gateway's own poll round (every 100 ms in tests, racing this call): either way once, as the
      // events below count.
      const abandoned = await heldTask(gw, { projectId, acceptedAt: new Date(Date.now() - 3_600_000) });
      await gw.app.get(TaskStore).sweepAbandoned(60_000);
      const [swept] = await sql<{ status: string }>(gw, 'SELECT status::text AS status FROM task WHERE id = $1', [
        abandoned.taskId,
      ]);
      expect(swept!.status).toBe('unknown');

      const types = (
        await sql<{ type: string }>(gw, 'SELECT type FROM outbox_event WHERE project_id = $1 ORDER BY type', [
          projectId,
        ])
      ).map((r) => r.type);
      expect(types).toEqual(['task.needs_review', 'task.needs_review', 'task.overrun']); // the overrun is also under review
      await eventually(async () => slack.received.length === 3, 10_000);
      const texts = slack.received.map((r) => (JSON.parse(r.body) as { text: string }).text).sort();
      expect(texts).toHaveLength(3);
      expect(
        texts.some((t) =>
          /^:money_with_wings: task \d+ \(gemini-3\.8-flash\) in project \*.+\* was charged [\d.]+ CREDITS, [\d.]+ above its hold of [\d.]+\.$/.test(
            t,
          ),
        ),
      ).toBe(true);
      expect(
        texts.some((t) => t.includes('needs review: the gateway stopped between the hold and the upstream answer')),
      ).toBe(true);
      expect(slack.received.every((r) => typeof r.headers['webhook-signature'] === 'string')).toBe(true);
    } finally {
      await slack.close();
    }
  });

  test('endpoints: refused input is a 400 that names the field; the secret is never listed; a disabled endpoint gets nothing new', async () => {
    for (const [vars, message] of [
      [{ url: 'ftp://example.com/x' }, /^url: must be an absolute http or https URL$/],
      [{ url: 'https://user:pw@example.com/x' }, /^url: must not carry a user name or password$/],
      [{ url: 'https://example.com/x', events: ['budget.spent'] }, /^events: "budget.spent" is not one of/],
      [{ url: 'https://example.com/x', p: '6b1f9a0e-0000-4000-8000-000000000000' }, /^projectId: no such project$/],
    ] as const) {
      const res = await graphql(
        gw,
        ADMIN,
        'mutation($url: String!, $events: [String!], $p: ID) { createWebhookEndpoint(url: $url, events: $events, projectId: $p) { secret } }',
        vars,
      );
      expect(res.body.errors?.[0]?.message).toMatch(message);
    }
    const { key } = await projectWithKey(gw);
    const denied = await graphql(gw, key, '{ webhookEndpoints { id } }');
    expect(denied.body.errors?.[0]).toMatchObject({ extensions: { code: 'FORBIDDEN' } });
    const listed = await graphql(gw, ADMIN, '{ webhookEndpoints { id url events format enabled } }');
    expect(JSON.stringify(listed.body)).not.toMatch(/whsec_/);

    const hook = await receiver();
    try {
      const { projectId, key: k } = await projectWithKey(gw);
      const { endpoint } = await createEndpoint(gw, hook.url, { p: projectId });
      const off = await graphql(
        gw,
        ADMIN,
        'mutation($id: ID!) { setWebhookEndpointEnabled(id: $id, enabled: false) { enabled } }',
        { id: endpoint.id },
      );
      expect(off.body.data).toEqual({ setWebhookEndpointEnabled: { enabled: false } });
      await setBudget(gw, projectId, '0.04', false, [100]);
      expect((await submitGeneration(gw, k, IMAGE)).status).toBe(200);
      expect(await sql(gw, 'SELECT count(*)::int AS n FROM outbox_event WHERE project_id = $1', [projectId])).toEqual([
        { n: 1 },
      ]);
      expect(
        await sql(gw, 'SELECT count(*)::int AS n FROM webhook_delivery WHERE endpoint_id = $1', [endpoint.id]),
      ).toEqual([{ n: 0 }]);
      const deleted = await graphql(gw, ADMIN, 'mutation($id: ID!) { deleteWebhookEndpoint(id: $id) }', {
        id: endpoint.id,
      });
      expect(deleted.body.data).toEqual({ deleteWebhookEndpoint: true });
    } finally {
      await hook.close();
    }
  });
});

test('a receiver that hangs does not slow submissions (p50 measured with and without it)', async () => {
  const gw = await gateway(await freshDatabase(), {
    SIMULATOR_DELAY_MS: '600000',
    WEBHOOK_POLL_MS: '20',
    WEBHOOK_TIMEOUT_MS: '3000',
    WEBHOOK_RETRY_BASE_MS: '50',
  });
  const hook = await receiver(() => 'hang');
  try {
    const quietProject = await projectWithKey(gw);
    const busyProject = await projectWithKey(gw);
    const p50 = async (key: string) => {
      const times: number[] = [];
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          for (let i = 0; i < 40; i++) {
            const started = performance.now();
            expect((await submitGeneration(gw, key, IMAGE)).status).toBe(200);
            times.push(performance.now() - started);
          }
        }),
      );
      return times.sort((x, y) => x - y)[Math.floor(times.length / 2)]!;
    };
    await p50(quietProject.key); // warm-up
    const quiet = await p50(quietProject.key);
    // A hundred thresholds crossed by the first ten submissions: a hundred events, each to an endpoint that hangs.
    await createEndpoint(gw, hook.url);
    await setBudget(
      gw,
      busyProject.projectId,
      '0.40',
      false,
      Array.from({ length: 100 }, (_, i) => i + 1),
    );
    const busy = await p50(busyProject.key);
    const inFlight = (
      await sql<{ n: number }>(gw, `SELECT count(*)::int AS n FROM webhook_delivery WHERE status = 'PENDING'`)
    )[0]!.n;
    console.log(
      `submission p50 ${quiet.toFixed(1)} ms quiet, ${busy.toFixed(1)} ms with ${hook.received.length} hanging deliveries (${inFlight} pending)`,
    );
    expect(hook.received.length).toBeGreaterThan(5);
    expect(busy).toBeLessThan(quiet * 2 + 5);
  } finally {
    await hook.close();
    await gw.close();
  }
});

test('a gateway SIGKILLed while deliveries are in flight: after a restart every event is delivered, duplicates only with the same webhook-id', async () => {
  const url = await freshDatabase();
  let hang = true;
  const hook = await receiver(() => (hang ? 'hang' : 200));
  const env = {
    DATABASE_URL: url,
    ADMIN_TOKEN: ADMIN,
    SIMULATOR_DELAY_MS: '600000',
    DATA_DIR: `/tmp/sg-kill-${process.pid}`,
    WEBHOOK_POLL_MS: '20',
    WEBHOOK_TIMEOUT_MS: '1500',
    WEBHOOK_RETRY_BASE_MS: '50',
  };
  const first = await spawnGateway(env);
  let second: Awaited<ReturnType<typeof spawnGateway>> | undefined;
  try {
    const res = await graphql<{ createProject: string }>(
      { url: first.url } as Gateway,
      ADMIN,
      'mutation { createProject(name: "killed") }',
    );
    const projectId = res.body.data.createProject;
    const key = (
      await graphql<{ issueApiKey: string }>(
        { url: first.url } as Gateway,
        ADMIN,
        'mutation($p: ID!) { issueApiKey(projectId: $p) }',
        { p: projectId },
      )
    ).body.data.issueApiKey;
    await createEndpoint({ url: first.url } as Gateway, hook.url);
    await setBudget({ url: first.url } as Gateway, projectId, '0.40', false, [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
    for (let i = 0; i < 10; i++)
      expect((await submitGeneration({ url: first.url } as Gateway, key, IMAGE)).status).toBe(200);
    await eventually(async () => hook.received.length >= 8, 10_000); // claimed and in flight, each hanging
    first.proc.kill('SIGKILL');
    await first.exited;
    hang = false;
    second = await spawnGateway(env);
    const pg = await import('pg');
    const client = new pg.default.Client({ connectionString: url });
    await client.connect();
    try {
      await eventually(
        async () =>
          (await client.query(`SELECT count(*)::int AS n FROM webhook_delivery WHERE status = 'DELIVERED'`)).rows[0]
            .n === 10,
        20_000,
      );
      const ids = (await client.query<{ id: string }>('SELECT id FROM outbox_event ORDER BY id')).rows.map((r) => r.id);
      expect(ids).toHaveLength(10);
      expect([...new Set(hook.received.map((r) => String(r.headers['webhook-id'])))].sort()).toEqual(ids);
    } finally {
      await client.end();
    }
  } finally {
    first.proc.kill('SIGKILL');
    second?.proc.kill('SIGTERM');
    await second?.exited;
    await hook.close();
  }
});
