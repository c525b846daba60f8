/**
 * OpenTelemetry traces (decisions §21) received by an OTLP/HTTP receiver the test starts: a
 * submission's span with its steps (authenticate, quote, hold, vendor call, record) as children,
 * and a settlement's span with the gen_ai attributes (model, token counts, the cost and its unit,
 * equal to the task's charge). No span carries the prompt's text, the API key or the admin token.
 * Off (no endpoint), nothing is loaded and no span is made.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Gateway } from '../../src/bootstrap.js';
import { TracingService } from '../../src/telemetry/tracing.service.js';
import { chatBody } from '../support/builders.js';
import {
  ADMIN,
  eventually,
  freshDatabase,
  gateway,
  pollTask,
  projectWithKey,
  sql,
  submitChat,
} from '../support/harness.js';

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: Array<{ key: string; value: OtlpValue }>;
}

let server: Server;
let bodies: string[] = [];
let endpoint: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.url === '/v1/traces') bodies.push(body);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((r) => server.close(r)));

const spans = () =>
  bodies.flatMap((b) =>
    (JSON.parse(b) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }> }).resourceSpans.flatMap(
      (r) => r.scopeSpans.flatMap((s) => s.spans),
    ),
  );
const attr = (s: OtlpSpan, key: string) => {
  const v = s.attributes.find((a) => a.key === key)?.value;
  return v
    ? (v.stringValue ?? v.doubleValue ?? (v.intValue !== undefined ? Number(v.intValue) : v.boolValue))
    : undefined;
};

test('a submission and its settlement are traced over OTLP with gen_ai attributes, never the prompt or a secret', async () => {
  const gw: Gateway = await gateway(await freshDatabase(), {
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_BSP_SCHEDULE_DELAY: '100',
    SIMULATOR_DELAY_MS: '100',
  });
  try {
    bodies = [];
    const { key } = await projectWithKey(gw);
    const prompt = 'PROMPT-TEXT-never-in-a-span';
    const chat = await submitChat(gw, key, chatBody({ messages: [{ role: 'user', content: prompt }] }));
    expect(chat.status).toBe(200);
    const taskId = String(chat.body.data.taskId);
    await eventually(async () => (await pollTask(gw, key, taskId)).body.data?.status === 'ready', 10_000, 100);

    const [task] = await sql(gw, `SELECT id::text, charge_amount::text AS charge, unit::text FROM task`);
    const settlement = await eventually(
      async () => spans().find((s) => s.name === 'spendgate.settlement' && attr(s, 'spendgate.settled') === true),
      10_000,
      100,
    );
    const root = spans().find((s) => s.name === 'spendgate.submission')!;
    expect(root).toBeDefined();
    expect(attr(root, 'gen_ai.operation.name')).toBe('chat');
    expect(attr(root, 'gen_ai.request.model')).toBe('glm-5.3');
    expect(attr(root, 'spendgate.task.id')).toBe(task!.id);
    expect(attr(root, 'http.response.status_code')).toBe(200);
    const children = spans().filter((s) => s.traceId === root.traceId && s.parentSpanId === root.spanId);
    expect(children.map((s) => s.name).sort()).toEqual(['authenticate', 'hold', 'quote', 'record', 'vendor call']);

    expect(attr(settlement, 'gen_ai.request.model')).toBe('glm-5.3');
    expect(attr(settlement, 'spendgate.cost.amount')).toBe(task!.charge);
    expect(attr(settlement, 'gen_ai.usage.cost')).toBeCloseTo(Number(task!.charge), 12);
    expect(attr(settlement, 'spendgate.cost.unit')).toBe(task!.unit);
    expect(attr(settlement, 'gen_ai.usage.input_tokens')).toBeGreaterThan(0);
    expect(attr(settlement, 'gen_ai.usage.output_tokens')).toBeGreaterThan(0);
    const settlementSteps = spans().filter((s) => s.parentSpanId === settlement.spanId);
    expect(settlementSteps.map((s) => s.name).sort()).toEqual(['ledger', 'price']);

    const everything = bodies.join('\n');
    for (const secret of [prompt, key, ADMIN]) expect(everything).not.toContain(secret);

    // A refusal is traced too, as an error with its code, never its message
    const refused = await submitChat(
      gw,
      key,
      chatBody({ model: 'no-such-model', messages: [{ role: 'user', content: prompt }] }),
    );
    expect(refused.status).toBe(400);
    const failed = await eventually(
      async () =>
        spans().find((s) => s.name === 'spendgate.submission' && attr(s, 'http.response.status_code') === 400),
      10_000,
      100,
    );
    expect(attr(failed, 'error.type')).toBe(String(refused.body.code));
    expect(bodies.join('\n')).not.toContain(prompt);
  } finally {
    await gw.close();
  }
}, 60_000);

test('off without an endpoint: no SDK, no span, the work just runs', async () => {
  const gw = await gateway(await freshDatabase());
  try {
    const tracing = gw.app.get(TracingService);
    expect(tracing.enabled).toBe(false);
    expect(tracing.start('spendgate.submission', () => ({}))).toBeUndefined();
  } finally {
    await gw.close();
  }
});
