/**
 * The gateway end to end on real PostgreSQL: keys, the unchanged vendor body, the task row,
 * polling (own project only), the background poller, charges in GraphQL (decisions §3 worked
 * examples through the running service), price-book versions, idempotency, and upstream faults.
 */
import type { Gateway } from '../../src/bootstrap.js';
import {
  ADMIN,
  eventually,
  freshDatabase,
  gateway,
  graphql,
  http,
  pollTask,
  projectWithKey,
  sql,
  submitChat,
  submitGeneration,
} from '../support/harness.js';

let gw: Gateway;
let key: string;
let projectId: string;
const user = [{ role: 'user', content: 'hello' }];
const TASK_QUERY = `query($id: ID!) { task(taskId: $id) { taskId status exactness priceBookVersion needsReview
  estimate { amount unit } charge { amount unit tier exactness lines { component quantity rate per amount } warnings }
  ledgerEntries { kind amount } } }`;

beforeAll(async () => {
  // A long simulator delay: tests decide when tasks finish, through the simulator's control plane.
  gw = await gateway(await freshDatabase(), { SIMULATOR_DELAY_MS: '600000' });
  ({ key, projectId } = await projectWithKey(gw));
});
afterAll(() => gw.close());

async function complete(taskId: number, status: 'ready' | 'failed', usage?: unknown) {
  const res = await http(`${gw.simulatorUrl}/__sim/tasks/${taskId}/complete`, {
    body: usage === undefined ? { status } : { status, usage },
  });
  expect(res.status).toBe(200);
}
const taskOf = async (id: number | string) =>
  (await graphql(gw, ADMIN, TASK_QUERY, { id: String(id) })).body.data!.task;

describe('keys', () => {
  test('missing or wrong key → 401 in the error shape', async () => {
    const none = await http(`${gw.url}/api-platform/v1/chat/completions`, {
      body: { model: 'glm-5.3', messages: user },
    });
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ code: 4010, message: expect.stringMatching(/API key/) });
    const wrong = await submitChat(gw, 'sg_000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', {
      model: 'glm-5.3',
      messages: user,
    });
    expect(wrong.status).toBe(401);
  });

  test('keys are stored hashed, never in clear', async () => {
    const rows = await sql(gw, 'SELECT prefix, encode(hash, $1) AS hash FROM api_key', ['hex']);
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(key.includes(row.hash)).toBe(false);
    // The secret part follows "sg_" + 12 hex + "_" (it may itself contain "_").
    const secret = key.slice('sg_000000000000_'.length);
    expect(secret).toHaveLength(32);
    expect(JSON.stringify(rows)).not.toContain(secret);
  });
});

describe('submission and polling', () => {
  test('returns the vendor body unchanged and records the task row', async () => {
    const res = await submitChat(gw, key, { model: 'gpt-5.6-luna', messages: user, max_tokens: 100 });
    expect(res.status).toBe(200);
    const sim = [...gw.simulator!.tasks.values()].at(-1)!;
    expect(res.text).toBe(
      JSON.stringify({
        code: 1000,
        data: { id: sim.id, taskId: sim.taskId, type: 'image', model: 'gpt-5.6-luna', status: 'processing' },
      }),
    );
    const [row] = await sql(
      gw,
      'SELECT project_id, model, kind, status, upstream_id, upstream_task_id::text, price_basis FROM task WHERE upstream_task_id = $1',
      [sim.taskId],
    );
    expect(row).toMatchObject({
      project_id: projectId,
      model: 'gpt-5.6-luna',
      kind: 'chat',
      status: 'processing',
      upstream_id: sim.id,
      upstream_task_id: String(sim.taskId),
    });
    expect(row.price_basis).toMatchObject({ kind: 'chat', maxTokens: 100, maxTokensSource: 'request' });
  });

  test("polling returns the upstream body unchanged and settles; another project's task is 404 like a missing one", async () => {
    const res = await submitGeneration(gw, key, { model: 'nano-banana-pro', prompt: 'a fox', resolution: '4K' });
    const taskId = res.body.data.taskId as number;
    const other = await projectWithKey(gw);
    const foreign = await pollTask(gw, other.key, taskId);
    const missing = await pollTask(gw, other.key, 123456789);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ code: 4040, message: `task ${taskId} not found` });
    expect(missing.body).toEqual({ code: 4040, message: 'task 123456789 not found' });

    const processing = await pollTask(gw, key, taskId);
    expect(processing.body.data.status).toBe('processing');
    await complete(taskId, 'ready');
    const ready = await pollTask(gw, key, taskId);
    expect(ready.status).toBe(200);
    const sim = gw.simulator!.tasks.get(taskId)!;
    // The vendor's record, byte for byte as the simulator renders it (key order included).
    expect(ready.text).toBe(
      JSON.stringify({
        code: 1000,
        data: {
          id: sim.id,
          taskId,
          type: 'image',
          model: 'nano-banana-pro',
          status: 'ready',
          output: { urls: [`https://sim.invalid/${sim.id}/0.png`] },
        },
      }),
    );
    expect(ready.body.data).toMatchObject({
      status: 'ready',
      taskId,
      output: { urls: [expect.stringContaining('.png')] },
    });
    const task = await taskOf(taskId);
    expect(task).toMatchObject({ status: 'ready', exactness: 'EXACT', charge: { amount: '0.26', unit: 'USD' } });
  });

  test('the background poller settles a task nobody polls', async () => {
    const res = await submitGeneration(gw, key, { model: 'sora-2-pro', prompt: 'waves', duration: 15 });
    const taskId = res.body.data.taskId;
    await complete(taskId, 'ready');
    const task = await eventually(async () => {
      const t = await taskOf(taskId);
      return t.status === 'ready' ? t : undefined;
    });
    expect(task.charge).toMatchObject({
      amount: '0.72',
      unit: 'USD',
      lines: [{ component: 'request:15s', quantity: '1', rate: '0.72', per: '1', amount: '0.72' }],
    });
    expect(task.ledgerEntries).toEqual([
      { kind: 'hold', amount: '0.72' },
      { kind: 'release', amount: '0.72' },
      { kind: 'charge', amount: '0.72' },
    ]);
  });

  test('a failed task costs nothing: its hold is released', async () => {
    const res = await submitGeneration(gw, key, { model: 'veo-3.1', prompt: 'rain', resolution: '4K', duration: 8 });
    const taskId = res.body.data.taskId;
    await complete(taskId, 'failed');
    await pollTask(gw, key, taskId);
    const task = await taskOf(taskId);
    expect(task).toMatchObject({ status: 'failed', charge: { amount: '0' } });
    expect(task.ledgerEntries).toEqual([
      { kind: 'hold', amount: '4.16' },
      { kind: 'release', amount: '4.16' },
    ]);
  });
});

describe('decisions §3 worked examples through the running service (charge read from GraphQL)', () => {
  const cases: Array<[string, Record<string, unknown>, unknown, string, string]> = [
    [
      'gpt-5.6-sol base tier',
      { model: 'gpt-5.6-sol', messages: user, max_tokens: 10_000 },
      { prompt_tokens: 272_000, completion_tokens: 10_000, prompt_tokens_details: { cached_tokens: 72_000 } },
      '987.19712',
      'base',
    ],
    [
      'gpt-5.6-sol long tier',
      { model: 'gpt-5.6-sol', messages: user, max_tokens: 10_000 },
      { prompt_tokens: 272_001, completion_tokens: 10_000, prompt_tokens_details: { cached_tokens: 72_000 } },
      '1863.5636292',
      'long',
    ],
    [
      'claude-opus-4-8',
      { model: 'claude-opus-4-8', messages: user },
      {
        input_tokens: 1_200,
        output_tokens: 3_000,
        cache_read_input_tokens: 50_000,
        cache_creation_input_tokens: 12_000,
        cache_creation: { ephemeral_5m_input_tokens: 10_000, ephemeral_1h_input_tokens: 2_000 },
      },
      '144.0894',
      'standard',
    ],
    [
      'gemini-3.8-flash',
      { model: 'gemini-3.8-flash', messages: user },
      {
        promptTokenCount: 20_000,
        cachedContentTokenCount: 8_000,
        candidatesTokenCount: 1_500,
        thoughtsTokenCount: 2_500,
      },
      '31.9956',
      'standard',
    ],
  ];
  test.each(cases)('%s → %s', async (_name, body, usage, amount, tier) => {
    const res = await submitChat(gw, key, body);
    const taskId = res.body.data.taskId;
    await complete(taskId, 'ready', usage);
    await pollTask(gw, key, taskId);
    const task = await taskOf(taskId);
    expect(task.charge).toMatchObject({ amount, unit: 'CREDITS', tier, exactness: 'EXACT' });
    expect(task.estimate.unit).toBe('CREDITS');
  });

  test('the estimate is kept with its lines: glm-5.3, "hello", max_tokens 1,000 holds 4.9084 credits', async () => {
    const res = await submitChat(gw, key, { model: 'glm-5.3', messages: user, max_tokens: 1000 });
    const taskId = String(res.body.data.taskId);
    const query = `query($id: ID!) { task(taskId: $id) { estimate { amount exactness lines { component quantity rate per amount } }
      charge { amount lines { component quantity amount } } } }`;
    const before = (await graphql(gw, ADMIN, query, { id: taskId })).body.data!.task;
    // "hello": 5 bytes → 2 tokens, + 4 for the message = 6 input tokens × 1400/1M = 0.0084;
    // 1,000 output tokens (max_tokens) × 4900/1M = 4.9; together 4.9084.
    expect(before).toEqual({
      estimate: {
        amount: '4.9084',
        exactness: 'ESTIMATE',
        lines: [
          { component: 'input', quantity: '6', rate: '1400', per: '1000000', amount: '0.0084' },
          { component: 'output', quantity: '1000', rate: '4900', per: '1000000', amount: '4.9' },
        ],
      },
      charge: null,
    });
    await complete(Number(taskId), 'ready', { prompt_tokens: 6, completion_tokens: 812 });
    await pollTask(gw, key, taskId);
    const after = (await graphql(gw, ADMIN, query, { id: taskId })).body.data!.task;
    // Settled: the estimate is unchanged; 812 × 4900/1M = 3.9788, + 0.0084 = 3.9872.
    expect(after.estimate).toEqual(before.estimate);
    expect(after.charge).toEqual({
      amount: '3.9872',
      lines: [
        { component: 'input', quantity: '6', amount: '0.0084' },
        { component: 'output', quantity: '812', amount: '3.9788' },
      ],
    });
  });

  test.each([
    ['seedream-4.0, 2K, n 7', { model: 'seedream-4.0', prompt: 'p', resolution: '2K', n: 7 }, '0.42'],
    ['happyhorse-1.0 defaults', { model: 'happyhorse-1.0', prompt: 'p' }, '0.88'],
    ['minimax-h3, 768P, 6 s', { model: 'minimax-h3', prompt: 'p', resolution: '768P', duration: 6 }, '0.54'],
  ])('%s → %s USD', async (_name, body, amount) => {
    const res = await submitGeneration(gw, key, body);
    await complete(res.body.data.taskId, 'ready');
    await pollTask(gw, key, res.body.data.taskId);
    expect((await taskOf(res.body.data.taskId)).charge).toMatchObject({ amount, unit: 'USD' });
  });

  test('missing usage on a ready chat task is charged at its estimate and flagged', async () => {
    const res = await submitChat(gw, key, { model: 'glm-5.3', messages: user, max_tokens: 100 });
    await complete(res.body.data.taskId, 'ready', null);
    await pollTask(gw, key, res.body.data.taskId);
    const task = await taskOf(res.body.data.taskId);
    expect(task.needsReview).toBe(true);
    expect(task.charge.amount).toBe(task.estimate.amount);
    expect(task.charge.exactness).toBe('ESTIMATE');
  });
});

describe('price book versions', () => {
  test('publishing a price for seedream-5.0 prices only tasks accepted after it; earlier charges stay', async () => {
    const unpricedProject = await projectWithKey(gw);
    const blocked = await submitGeneration(gw, unpricedProject.key, { model: 'seedream-5.0', prompt: 'p' });
    expect(blocked.status).toBe(402);
    expect(blocked.body.message).toMatch(/seedream-5.0 has no published price/);

    const before = await submitGeneration(gw, key, { model: 'seedream-4.0', prompt: 'p', resolution: '4K' });
    const published = await graphql(
      gw,
      ADMIN,
      `
        mutation {
          publishPrices(
            note: "test"
            rates: [
              { model: "seedream-5.0", unit: USD, component: "image", key: "2K", rate: "0.05" }
              { model: "seedream-4.0", unit: USD, component: "image", key: "4K", rate: "0.09" }
            ]
          )
        }
      `,
    );
    expect(published.body.errors).toBeUndefined();
    const version = published.body.data!.publishPrices;
    expect(version).toBeGreaterThan(1);

    const after = await submitGeneration(gw, key, { model: 'seedream-4.0', prompt: 'p', resolution: '4K' });
    const now5 = await submitGeneration(gw, unpricedProject.key, { model: 'seedream-5.0', prompt: 'p', n: 3 });
    expect(now5.status).toBe(200);
    for (const r of [before, after, now5]) {
      await complete(r.body.data.taskId, 'ready');
      await pollTask(gw, r === now5 ? unpricedProject.key : key, r.body.data.taskId);
    }
    expect(await taskOf(before.body.data.taskId)).toMatchObject({ priceBookVersion: 1, charge: { amount: '0.07' } });
    expect(await taskOf(after.body.data.taskId)).toMatchObject({
      priceBookVersion: version,
      charge: { amount: '0.09' },
    });
    expect(await taskOf(now5.body.data.taskId)).toMatchObject({
      priceBookVersion: version,
      charge: { amount: '0.15' },
    });
  });
});

describe('idempotency', () => {
  test('same key and body replays without a second upstream call or hold; a different body is 409', async () => {
    const body = { model: 'happyhorse-1.0', prompt: 'idempotent', duration: 10 };
    const headers = { 'idempotency-key': 'order-42' };
    const calls = gw.simulator!.tasks.size;
    const first = await submitGeneration(gw, key, body, headers);
    const second = await submitGeneration(
      gw,
      key,
      { duration: 10, prompt: 'idempotent', model: 'happyhorse-1.0' },
      headers,
    );
    expect(second.status).toBe(200);
    expect(second.text).toBe(first.text);
    expect(gw.simulator!.tasks.size).toBe(calls + 1);
    const holds = await sql(
      gw,
      `SELECT count(*)::int AS n FROM ledger_entry e JOIN task t ON t.id = e.task_id WHERE t.idempotency_key = 'order-42' AND e.kind = 'hold'`,
    );
    expect(holds[0].n).toBe(1);
    const conflict = await submitGeneration(gw, key, { ...body, duration: 15 }, headers);
    expect(conflict.status).toBe(409);
    expect(conflict.body.message).toMatch(/Idempotency-Key was already used with a different request body/);
  });

  test('concurrent submissions: each new key gets one task, hold and upstream call; one key sent 8 times at once is sent upstream once', async () => {
    const body = { model: 'seedream-4.0', prompt: 'concurrent keys' };
    const calls = gw.simulator!.tasks.size;
    const fresh = await Promise.all(
      Array.from({ length: 20 }, (_, i) => submitGeneration(gw, key, body, { 'idempotency-key': `batch-${i}` })),
    );
    expect(fresh.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(gw.simulator!.tasks.size).toBe(calls + 20);
    const rows = await sql<{ key: string; hashed: boolean; holds: number }>(
      gw,
      `SELECT t.idempotency_key AS key, t.request_hash IS NOT NULL AS hashed, count(e.id)::int AS holds
       FROM task t LEFT JOIN ledger_entry e ON e.task_id = t.id AND e.kind = 'hold'
       WHERE t.idempotency_key LIKE 'batch-%' GROUP BY 1, 2 ORDER BY 1`,
    );
    expect(rows).toHaveLength(20);
    expect(rows.every((r) => r.hashed && r.holds === 1)).toBe(true);
    // A key written by the batched path replays like any other.
    const again = await submitGeneration(gw, key, body, { 'idempotency-key': 'batch-7' });
    expect(again.status).toBe(200);
    expect(again.text).toBe(fresh[7]!.text);
    expect(gw.simulator!.tasks.size).toBe(calls + 20);

    const same = await Promise.all(
      Array.from({ length: 8 }, () => submitGeneration(gw, key, body, { 'idempotency-key': 'same-key' })),
    );
    const ok = same.filter((r) => r.status === 200);
    expect(same.every((r) => r.status === 200 || r.status === 409)).toBe(true);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(new Set(ok.map((r) => r.text)).size).toBe(1); // the one answer, replayed
    expect(gw.simulator!.tasks.size).toBe(calls + 21);
    const held = await sql(
      gw,
      `SELECT count(*)::int AS n FROM ledger_entry e JOIN task t ON t.id = e.task_id WHERE t.idempotency_key = 'same-key' AND e.kind = 'hold'`,
    );
    expect(held[0].n).toBe(1);
  });
});

describe('upstream faults', () => {
  afterEach(async () => {
    await http(`${gw.simulatorUrl}/__sim/config`, {
      body: { errorRate: 0, hangRate: 0, malformedRate: 0, resetRate: 0 },
    });
  });

  test('upstream 5xx → 502, hold released, nothing charged', async () => {
    await http(`${gw.simulatorUrl}/__sim/config`, { body: { errorRate: 1 } });
    const res = await submitGeneration(gw, key, { model: 'seedream-4.0', prompt: 'p' });
    expect(res.status).toBe(502);
    expect(res.body).toMatchObject({ code: 5020, message: expect.stringMatching(/HTTP 500; nothing was charged/) });
    const [t] = await sql(gw, `SELECT id, status FROM task ORDER BY id DESC LIMIT 1`);
    expect(t.status).toBe('rejected');
    const entries = await sql(gw, 'SELECT kind, amount::text FROM ledger_entry WHERE task_id = $1 ORDER BY id', [t.id]);
    expect(entries).toEqual([
      { kind: 'hold', amount: '0.04' },
      { kind: 'release', amount: '0.04' },
    ]);
  });

  test('a malformed 200 → 502, the task is unknown and keeps its hold', async () => {
    await http(`${gw.simulatorUrl}/__sim/config`, { body: { malformedRate: 1 } });
    const res = await submitGeneration(gw, key, { model: 'seedream-4.0', prompt: 'p' });
    expect(res.status).toBe(502);
    expect(res.body.message).toMatch(/outcome is unknown and its hold is kept/);
    const [t] = await sql(gw, `SELECT id, status, needs_review FROM task ORDER BY id DESC LIMIT 1`);
    expect(t).toMatchObject({ status: 'unknown', needs_review: true });
    const entries = await sql(gw, 'SELECT kind FROM ledger_entry WHERE task_id = $1', [t.id]);
    expect(entries).toEqual([{ kind: 'hold' }]);
  });
});
