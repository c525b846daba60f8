/**
 * `stream: true` (decisions §1): an upstream event stream is relayed to the client as it
 * arrives, and the task is still recorded and settled: from the stream's usage when it reports
 * one, otherwise at the estimate, flagged for review. A stream cut off half-way is never free.
 * Over HTTP, against real PostgreSQL and the simulator's stream modes.
 */
import fc from 'fast-check';
import type { Gateway } from '../../src/bootstrap.js';
import { dec } from '../../src/pricing/money.js';
import { reconcile } from '../../src/ledger/reconcile.js';
import { PollerService } from '../../src/tasks/poller.service.js';
import { TaskStore } from '../../src/tasks/task-store.js';
import { EventStreamReader, readEventStream } from '../../src/upstream/event-stream.js';
import { eventually, freshDatabase, gateway, http, pollTask, projectWithKey, sql } from '../support/harness.js';

const user = [{ role: 'user', content: 'Write one line about ledgers.' }];
/** glm-5.3 list prices, credits per 1M tokens: input 1400, output 4900, cache read 350. */
const GLM = { model: 'glm-5.3', messages: user, max_tokens: 100, stream: true };

let gw: Gateway;
let key: string;
beforeAll(async () => {
  // No background poller: each test decides who settles. Tasks stay processing unless forced.
  gw = await gateway(await freshDatabase(), { POLLER_ENABLED: 'false', SIMULATOR_DELAY_MS: '600000' });
  ({ key } = await projectWithKey(gw));
});
afterAll(() => gw.close());
const knobs = (body: Record<string, unknown>) => http(`${gw.simulatorUrl}/__sim/config`, { body });
afterEach(() => knobs({ streamMode: 'off', pollStream: false, streamUsage: null }));

/** Submits with fetch and reads the body chunk by chunk; `cut` says whether it broke off. */
async function submitStream(body: unknown, abortAfterFirstChunk = false) {
  const controller = new AbortController();
  const res = await fetch(`${gw.url}/api-platform/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: controller.signal,
  });
  const chunks: string[] = [];
  let cut = false;
  try {
    const decoder = new TextDecoder();
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      chunks.push(decoder.decode(chunk, { stream: true }));
      if (abortAfterFirstChunk) {
        controller.abort();
        break;
      }
    }
  } catch {
    cut = true;
  }
  return { status: res.status, contentType: res.headers.get('content-type'), text: chunks.join(''), cut };
}

const lastTask = async () =>
  (
    await sql(
      gw,
      `SELECT id::text, status, upstream_task_id::text, estimate_amount::text, charge_amount::text, charge_exactness,
              needs_review, review_reason, settled_at FROM task ORDER BY id DESC LIMIT 1`,
    )
  )[0];
const entries = (taskId: string) =>
  sql(gw, 'SELECT kind, amount::text FROM ledger_entry WHERE task_id = $1 ORDER BY id', [taskId]);

test('a stream with usage is relayed event by event and charged exactly from that usage', async () => {
  await knobs({
    streamMode: 'usage',
    streamUsage: { prompt_tokens: 1200, completion_tokens: 300, prompt_tokens_details: { cached_tokens: 200 } },
  });
  const res = await submitStream(GLM);
  expect(res.status).toBe(200);
  expect(res.contentType).toBe('text/event-stream');
  const sim = [...gw.simulator!.tasks.values()].at(-1)!;
  // The client gets the vendor's events unchanged and in order.
  expect(res.text).toBe(
    [
      { code: 1000, data: { id: sim.id, taskId: sim.taskId, type: 'image', model: 'glm-5.3', status: 'processing' } },
      { choices: [{ index: 0, delta: { content: 'Simulated ' } }] },
      { choices: [{ index: 0, delta: { content: 'streamed ' } }] },
      { choices: [{ index: 0, delta: { content: 'answer.' } }] },
      {
        code: 1000,
        data: {
          id: sim.id,
          taskId: sim.taskId,
          type: 'image',
          model: 'glm-5.3',
          status: 'ready',
          usage: { prompt_tokens: 1200, completion_tokens: 300, prompt_tokens_details: { cached_tokens: 200 } },
        },
      },
    ]
      .map((e) => `data: ${JSON.stringify(e)}\n\n`)
      .join('') + 'data: [DONE]\n\n',
  );
  const task = await lastTask();
  // 1,000 uncached input × 1400/1M = 1.4; 200 cache reads × 350/1M = 0.07; 300 output × 4900/1M = 1.47.
  // 300 output tokens against max_tokens 100: the charge passes the hold, an overrun (decisions §6):
  // charged in full, and flagged, never silent.
  expect(task).toMatchObject({
    status: 'ready',
    upstream_task_id: String(sim.taskId),
    charge_amount: '2.94',
    charge_exactness: 'EXACT',
    needs_review: true,
  });
  const [held] = await sql(gw, 'SELECT hold_amount::text AS hold, overrun::text AS overrun FROM task WHERE id = $1', [
    task.id,
  ]);
  expect(held.overrun).toBe(dec('2.94').minus(held.hold).toFixed());
  const lines = await sql(
    gw,
    `SELECT component, quantity::text, amount::text FROM charge_line WHERE task_id = $1 AND stage = 'charge' ORDER BY seq`,
    [task.id],
  );
  expect(lines).toEqual([
    { component: 'input', quantity: '1000', amount: '1.4' },
    { component: 'output', quantity: '300', amount: '1.47' },
    { component: 'cache_read', quantity: '200', amount: '0.07' },
  ]);
  expect(await entries(task.id)).toEqual([
    { kind: 'hold', amount: task.estimate_amount },
    { kind: 'release', amount: task.estimate_amount },
    { kind: 'charge', amount: '2.94' },
  ]);
  expect(await reconcile(gw.db)).toEqual([]);
});

test('a stream that ends without usage is charged at its estimate and flagged for review', async () => {
  await knobs({ streamMode: 'no_usage' });
  const res = await submitStream(GLM);
  expect(res.text.endsWith('data: [DONE]\n\n')).toBe(true);
  const task = await lastTask();
  expect(task).toMatchObject({
    status: 'ready',
    charge_amount: task.estimate_amount,
    charge_exactness: 'ESTIMATE',
    needs_review: true,
  });
  expect(task.review_reason).toMatch(/no usage reported; charged at the estimate/);
  expect(await reconcile(gw.db)).toEqual([]);
});

test('a stream cut off after naming the task keeps its hold; the vendor record settles it exactly', async () => {
  await knobs({ streamMode: 'cut' });
  const res = await submitStream(GLM);
  expect(res.cut).toBe(true); // the client sees the break, not a clean end
  let task = await eventually(async () => {
    const t = await lastTask();
    return t.status === 'processing' ? t : undefined;
  });
  expect(task.settled_at).toBeNull();
  expect(await entries(task.id)).toEqual([{ kind: 'hold', amount: task.estimate_amount }]);

  await http(`${gw.simulatorUrl}/__sim/tasks/${task.upstream_task_id}/complete`, {
    body: { status: 'ready', usage: { prompt_tokens: 20, completion_tokens: 50 } },
  });
  await gw.app.get(TaskStore).pollAgainIn(task.id, 0, 3_600_000, true); // due now, not in a second
  expect(await gw.app.get(PollerService).round()).toBe(1);
  task = await lastTask();
  // 20 input × 1400/1M = 0.028; 50 output × 4900/1M = 0.245.
  expect(task).toMatchObject({ status: 'ready', charge_amount: '0.273', charge_exactness: 'EXACT' });
  expect(await reconcile(gw.db)).toEqual([]);
});

test('a stream cut off before naming the task is charged at its estimate, flagged, never free', async () => {
  await knobs({ streamMode: 'cut_unnamed' });
  const res = await submitStream(GLM);
  expect(res.cut).toBe(true);
  const task = await eventually(async () => {
    const t = await lastTask();
    return t.settled_at ? t : undefined;
  });
  expect(task).toMatchObject({
    status: 'ready',
    upstream_task_id: null,
    charge_amount: task.estimate_amount,
    charge_exactness: 'ESTIMATE',
    needs_review: true,
  });
  expect(task.review_reason).toMatch(
    /cut off before its end .* did not name the vendor's task; charged at the estimate/,
  );
  expect(Number(task.charge_amount)).toBeGreaterThan(0);
  expect(await reconcile(gw.db)).toEqual([]);
});

test('a client that hangs up mid-stream does not stop the settlement', async () => {
  await knobs({ streamMode: 'usage', streamUsage: { prompt_tokens: 10, completion_tokens: 10 } });
  await submitStream(GLM, true);
  // 10 × 1400/1M + 10 × 4900/1M = 0.014 + 0.049.
  const task = await eventually(async () => {
    const t = await lastTask();
    return t.settled_at ? t : undefined;
  });
  expect(task).toMatchObject({ status: 'ready', charge_amount: '0.063', charge_exactness: 'EXACT' });
});

test('a stream slow to name its task keeps the task fresh: the abandoned-submission sweep leaves it alone', async () => {
  // SUBMIT_GRACE_MS=0 brings the relay's heartbeat down to its floor, one second.
  const slow = await gateway(await freshDatabase(), {
    POLLER_ENABLED: 'false',
    SIMULATOR_DELAY_MS: '600000',
    SUBMIT_GRACE_MS: '0',
  });
  try {
    const { key: slowKey } = await projectWithKey(slow);
    // The vendor sends the stream's headers, then nothing for 3 s before the event naming the task.
    await http(`${slow.simulatorUrl}/__sim/config`, {
      body: { streamMode: 'usage', streamUsage: { prompt_tokens: 10, completion_tokens: 10 }, streamLeadMs: 3000 },
    });
    const answer = fetch(`${slow.url}/api-platform/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${slowKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(GLM),
    }).then((r) => r.text());

    await new Promise((r) => setTimeout(r, 2500));
    // 2.5 s into the silence the task is unnamed, still `submitting`, but touched within the last beat.
    const [during] = await sql(
      slow,
      `SELECT status, extract(epoch FROM clock_timestamp() - updated_at)::float8 AS idle_s,
              extract(epoch FROM updated_at - accepted_at)::float8 AS touched_after_s FROM task`,
    );
    expect(during.status).toBe('submitting');
    expect(during.touched_after_s).toBeGreaterThan(0.9); // written by a beat, not at the hold
    expect(during.idle_s).toBeLessThan(1.8);
    // A sweep for submissions idle over 2 s (a dead gateway's) does not take it.
    expect(await slow.app.get(TaskStore).sweepAbandoned(2000)).toBe(0);

    expect(await answer).toMatch(/data: \[DONE\]\n\n$/);
    // 10 × 1400/1M + 10 × 4900/1M = 0.014 + 0.049.
    const task = await eventually(
      async () =>
        (
          await sql(
            slow,
            `SELECT status, charge_amount::text, charge_exactness, needs_review FROM task WHERE settled_at IS NOT NULL`,
          )
        )[0],
    );
    expect(task).toEqual({ status: 'ready', charge_amount: '0.063', charge_exactness: 'EXACT', needs_review: false });
    expect(await reconcile(slow.db)).toEqual([]);
  } finally {
    await slow.close();
  }
});

test('a poll answered with a stream is relayed and settles the task; the poller reads streams too', async () => {
  const submit = await http(`${gw.url}/api-platform/v1/chat/completions`, { key, body: { ...GLM, stream: false } });
  const taskId = submit.body.data.taskId as number;
  await knobs({ pollStream: true });
  const processing = await pollTask(gw, key, taskId);
  expect(processing.headers.get('content-type')).toBe('text/event-stream');
  expect(readEventStream(processing.text).status).toBe('processing');
  expect((await lastTask()).status).toBe('processing');

  await http(`${gw.simulatorUrl}/__sim/tasks/${taskId}/complete`, {
    body: { status: 'ready', usage: { prompt_tokens: 100, completion_tokens: 10 } },
  });
  const ready = await pollTask(gw, key, taskId);
  expect(ready.text).toMatch(/^data: \{"code":1000,"data":\{.*"status":"ready".*\}\}\n\ndata: \[DONE\]\n\n$/);
  // 100 × 1400/1M + 10 × 4900/1M = 0.14 + 0.049.
  expect(await lastTask()).toMatchObject({ status: 'ready', charge_amount: '0.189', charge_exactness: 'EXACT' });

  const second = await http(`${gw.url}/api-platform/v1/chat/completions`, { key, body: { ...GLM, stream: false } });
  await http(`${gw.simulatorUrl}/__sim/tasks/${second.body.data.taskId}/complete`, {
    body: { status: 'ready', usage: { prompt_tokens: 1, completion_tokens: 1 } },
  });
  await gw.app.get(TaskStore).pollAgainIn((await lastTask()).id, 0, 3_600_000, true);
  // A poll whose slot passed while the event loop was busy is put back, not sent late (poller.service.ts):
  // on a loaded machine the first round may send nothing, so a round or two more may settle it, once.
  let settled = 0;
  for (let round = 0; round < 3 && settled === 0; round++) settled += await gw.app.get(PollerService).round();
  expect(settled).toBe(1);
  // 1 × 1400/1M + 1 × 4900/1M = 0.0014 + 0.0049.
  expect(await lastTask()).toMatchObject({ status: 'ready', charge_amount: '0.0063' });
  expect(await reconcile(gw.db)).toEqual([]);
});

describe('EventStreamReader', () => {
  const stream =
    ': keep-alive\r\n' +
    'event: message_start\r\ndata: {"message":{"usage":{"input_tokens":12,"cache_creation":{"ephemeral_5m_input_tokens":3},"output_tokens":1}}}\r\n\r\n' +
    'data: {"code":1000,"data":{"id":"ch_1","taskId":7,\n' +
    'data: "status":"processing"}}\n\n' +
    'data: {"delta":{"text":"é — ✓"}}\r\r' +
    'data: {"usage":{"output_tokens":40,"cache_creation":{"ephemeral_1h_input_tokens":2}}}\n\n' +
    'data: [DONE]\n\n';
  const expected = {
    acceptance: {
      id: 'ch_1',
      taskId: '7',
      body: '{"code":1000,"data":{"id":"ch_1","taskId":7,\n"status":"processing"}}',
    },
    status: 'processing',
    usage: {
      input_tokens: 12,
      output_tokens: 40,
      cache_creation: { ephemeral_5m_input_tokens: 3, ephemeral_1h_input_tokens: 2 },
    },
    events: 5,
    done: true,
  };

  test('reads multi-line data, CR/LF/CRLF line ends, comments, [DONE], and merges cumulative usage', () => {
    expect(readEventStream(stream)).toEqual(expected);
  });

  test('reads the same facts however the bytes are split into chunks (property)', () => {
    const bytes = Buffer.from(stream, 'utf8');
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 40 }), (cuts) => {
        const reader = new EventStreamReader();
        let from = 0;
        for (const at of [...cuts].sort((a, b) => a - b)) {
          reader.push(bytes.subarray(from, at)); // may split a UTF-8 character or a CRLF
          from = at;
        }
        reader.push(bytes.subarray(from));
        expect(reader.end()).toEqual(expected);
      }),
      { numRuns: 500 },
    );
  });
});
