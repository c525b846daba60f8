/**
 * The edges (decisions §5, §6), each reproduced as it was found and answered as a finance-grade service
 * should: the vendor key never reaches a client, Idempotency-Keys are freed or replayed, one bad
 * row does not fail its batch, prototype names and deep nesting are refused, CSV cells cannot
 * become formulas, ids out of range are 404s, and the smaller ones (NUL bytes, 414, publishPrices,
 * introspection in production, huge 400s, media URL schemes).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Gateway } from '../../src/bootstrap.js';
import { csvCell } from '../../src/common/csv.js';
import { TaskStore } from '../../src/tasks/task-store.js';
import { reconcile } from '../../src/ledger/reconcile.js';
import { heldTask } from '../support/builders.js';
import { DUPLICATE_TASK_ID, fakeVendor, type FakeVendor } from '../support/fake-vendor.js';
import {
  ADMIN,
  freshDatabase,
  gateway,
  graphql,
  http,
  pollTask,
  projectWithKey,
  sql,
  submitChat,
  submitGeneration,
  type GraphqlAnswer,
  type GraphqlData,
} from '../support/harness.js';

const run = promisify(execFile);
const VENDOR_KEY = 'vk-live-5c1d9e77a3b04f2e8d61';
const IMAGE = { model: 'seedream-4.0', prompt: 'p' }; // 0.04 USD
const chat = (content: string, extra: Record<string, unknown> = {}) => ({
  model: 'glm-5.3',
  messages: [{ role: 'user', content }],
  max_tokens: 50,
  ...extra,
});

describe('the vendor key never reaches a client (item 3)', () => {
  let vendor: FakeVendor;
  let gw: Gateway;
  let key: string;
  beforeAll(async () => {
    vendor = await fakeVendor();
    gw = await gateway(await freshDatabase(), {
      UPSTREAM_BASE_URL: vendor.url,
      UPSTREAM_API_KEY: VENDOR_KEY,
      POLLER_ENABLED: 'false',
    });
    ({ key } = await projectWithKey(gw));
  });
  afterAll(async () => {
    await gw.close();
    await vendor.close();
  });

  test.each([
    ['a 401 that echoes the key', 'echo-401', 401],
    ['a 500 that echoes the key', 'echo-500', 500],
  ])('submit refused with %s → 502 with a redacted summary, never the vendor body', async (_name, prompt, status) => {
    const res = await submitGeneration(gw, key, { ...IMAGE, prompt });
    expect(res.status).toBe(502);
    expect(res.text).not.toContain(VENDOR_KEY);
    expect(res.body.details).toMatchObject({
      upstreamStatus: status,
      upstreamMessage: expect.stringContaining('[redacted]'),
    });
    expect(res.body.details.upstreamBody).toBeUndefined();
  });

  test('a poll answered non-200 with the key echoed → 502 without it', async () => {
    const accepted = await submitGeneration(gw, key, { ...IMAGE, prompt: 'echo-poll' });
    expect(accepted.status).toBe(200);
    const res = await pollTask(gw, key, accepted.body.data.taskId);
    expect(res.status).toBe(502);
    expect(res.text).not.toContain(VENDOR_KEY);
    expect(res.body.details).toEqual({
      upstreamStatus: 503,
      upstreamCode: 5030,
      upstreamMessage: 'upstream overloaded; request was authorized with Bearer [redacted]',
    });
  });

  test('a stream that carries the key split across two chunks is relayed without it', async () => {
    const res = await submitChat(gw, key, chat('echo-stream', { stream: true }));
    expect(res.status).toBe(200);
    expect(res.text).toContain('"debug":"Bearer [redacted]"');
    expect(res.text).not.toContain(VENDOR_KEY);
    expect(res.text).not.toContain(VENDOR_KEY.slice(VENDOR_KEY.length / 2));
  });
});

describe('Idempotency-Key after a refusal or an unknown outcome (item 5, decisions §10)', () => {
  let gw: Gateway;
  let key: string;
  let projectId: string;
  beforeAll(async () => {
    gw = await gateway(await freshDatabase(), {
      SIMULATOR_DELAY_MS: '600000',
      UPSTREAM_TIMEOUT_MS: '400',
      UPSTREAM_CONNECT_TIMEOUT_MS: '200',
    });
    ({ key, projectId } = await projectWithKey(gw));
  });
  afterAll(() => gw.close());
  const knobs = (body: Record<string, number>) => http(`${gw.simulatorUrl}/__sim/config`, { body });

  test('a 502 "nothing was charged" frees the key: the retry is a new request and succeeds', async () => {
    await knobs({ errorRate: 1 });
    const refused = await submitGeneration(gw, key, IMAGE, { 'idempotency-key': 'order-1' });
    expect(refused.status).toBe(502);
    expect(refused.body.message).toMatch(/nothing was charged/);
    await knobs({ errorRate: 0 });
    const retry = await submitGeneration(gw, key, IMAGE, { 'idempotency-key': 'order-1' });
    expect(retry.status).toBe(200);
    // And the key is now bound to the accepted task: a third send replays it.
    const again = await submitGeneration(gw, key, IMAGE, { 'idempotency-key': 'order-1' });
    expect(again.text).toBe(retry.text);
  });

  test('a 504 unknown outcome keeps the key: the retry gets the same answer and no second vendor task', async () => {
    await knobs({ resetRate: 1 });
    const first = await submitGeneration(gw, key, IMAGE, { 'idempotency-key': 'order-2' });
    await knobs({ resetRate: 0 });
    expect(first.status).toBe(504);
    const calls = gw.simulator!.tasks.size;
    for (let i = 0; i < 3; i++) {
      const retry = await submitGeneration(gw, key, IMAGE, { 'idempotency-key': 'order-2' });
      expect(retry.status).toBe(504);
      expect(retry.text).toBe(first.text);
    }
    expect(gw.simulator!.tasks.size).toBe(calls);
  });

  test('a task swept to unknown (its gateway died before answering) answers its key with the unknown outcome', async () => {
    // The hold of a submission whose gateway then died: held, `submitting`, never answered.
    await heldTask(gw, { projectId, body: IMAGE, idempotencyKey: 'order-3' });
    expect((await submitGeneration(gw, key, IMAGE, { 'idempotency-key': 'order-3' })).status).toBe(409); // still in progress
    await gw.app.get(TaskStore).sweepAbandoned(0);
    const retry = await submitGeneration(gw, key, IMAGE, { 'idempotency-key': 'order-3' });
    expect(retry.status).toBe(504);
    expect(retry.body.message).toMatch(
      /unknown outcome \(task gw-\d+\): its hold is kept for review and it is not sent to the vendor again/,
    );
  });
});

test('a task flagged for its age is still swept to unknown: the flag is no sign of life (its gateway died)', async () => {
  // The poller off: the flag comes first here, as a poll round's may when the hold lands between its two statements.
  const gw = await gateway(await freshDatabase(), { POLLER_ENABLED: 'false' });
  try {
    const { projectId } = await projectWithKey(gw);
    // Held an hour ago and never answered.
    const { taskId } = await heldTask(gw, { projectId, body: IMAGE, acceptedAt: new Date(Date.now() - 3_600_000) });
    const store = gw.app.get(TaskStore);
    expect(await store.flagAgedSubmitting(() => 1_800_000)).toBe(1);
    expect(await store.sweepAbandoned(60_000)).toBe(1);
    const [task] = await sql<{ status: string; needs_review: boolean }>(
      gw,
      'SELECT status::text AS status, needs_review FROM task WHERE id = $1',
      [taskId],
    );
    expect(task).toEqual({ status: 'unknown', needs_review: true });
  } finally {
    await gw.close();
  }
});

test('one duplicate vendor taskId fails only its own submission: its neighbours in the batch succeed (item 6)', async () => {
  const vendor = await fakeVendor();
  const gw = await gateway(await freshDatabase(), {
    UPSTREAM_BASE_URL: vendor.url,
    UPSTREAM_API_KEY: VENDOR_KEY,
    POLLER_ENABLED: 'false',
  });
  try {
    const { key } = await projectWithKey(gw);
    const prompts = Array.from({ length: 120 }, (_, i) => (i % 20 === 7 ? 'dup' : `innocent-${i}`));
    const results = await Promise.all(prompts.map((prompt) => submitGeneration(gw, key, { ...IMAGE, prompt })));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s >= 500 && s !== 502)).toEqual([]);
    results.forEach((r, i) => {
      if (prompts[i] !== 'dup') expect(r.status).toBe(200);
    });
    const dups = results.filter((_, i) => prompts[i] === 'dup');
    expect(dups.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of dups.filter((d) => d.status !== 200)) {
      expect(r.status).toBe(502);
      expect(r.body.message).toMatch(
        new RegExp(`taskId ${DUPLICATE_TASK_ID}, which is already recorded for another task`),
      );
    }
    const rows = await sql(
      gw,
      `SELECT status, count(*)::int AS n, bool_and(needs_review) AS review FROM task GROUP BY status ORDER BY status`,
    );
    expect(rows).toEqual([
      { status: 'processing', n: 115, review: false },
      { status: 'unknown', n: 5, review: true },
    ]);
    expect(await reconcile(gw.db)).toEqual([]);
  } finally {
    await gw.close();
    await vendor.close();
  }
});

describe('requests, ids and exports at the edges', () => {
  let gw: Gateway;
  let key: string;
  let projectId: string;
  beforeAll(async () => {
    gw = await gateway(await freshDatabase(), { SIMULATOR_DELAY_MS: '0' });
    ({ key, projectId } = await projectWithKey(gw));
  });
  afterAll(() => gw.close());

  test.each(['constructor', 'toString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf', '__defineGetter__'])(
    'a field named %s is refused as not offered, and never reaches the vendor (item 7)',
    async (field) => {
      const before = gw.simulator!.tasks.size;
      const res = await submitChat(gw, key, { ...chat('hi'), [field]: 1 });
      expect(res.status).toBe(400);
      expect(res.body.details.problems).toContainEqual({ field, reason: 'is not offered by glm-5.3' });
      expect(gw.simulator!.tasks.size).toBe(before);
    },
  );

  test('5,000 levels of nesting under a prototype name → 400, not a 500 (item 7)', async () => {
    const deep = `${'{"a":'.repeat(5_000)}1${'}'.repeat(5_000)}`;
    const raw = `${JSON.stringify(chat('hi')).slice(0, -1)},"constructor":${deep}}`;
    const res = await http(`${gw.url}/api-platform/v1/chat/completions`, {
      key,
      raw,
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 4000, message: 'body: nests deeper than 32 levels' });
    expect((await sql(gw, 'SELECT count(*)::int AS n FROM task'))[0].n).toBe(0);
  });

  test('100,000 bad messages → a small 400 that lists 20 problems and counts the rest (item 11)', async () => {
    const res = await submitChat(gw, key, {
      model: 'glm-5.3',
      messages: Array.from({ length: 100_000 }, () => ({ role: 7 })),
    });
    expect(res.status).toBe(400);
    expect(res.body.details.problems).toHaveLength(20);
    expect(res.body.details.moreProblems).toBe(200_000 - 20);
    expect(res.text.length).toBeLessThan(5_000);
  });

  test.each([
    ['http', 'http://x.test/a.png'],
    ['ftp', 'ftp://x.test/a.png'],
    ['javascript', 'javascript:alert(1)'],
    ['a relative path', '/a.png'],
  ])('a %s media URL on a generation route → 400 (item 11)', async (_name, url) => {
    const res = await submitGeneration(gw, key, { model: 'veo-3.1', prompt: 'p', imageUrl: url });
    expect(res.status).toBe(400);
    expect(res.body.details.problems).toContainEqual({
      field: 'imageUrl',
      reason: expect.stringMatching(/absolute URL|HTTPS/),
    });
  });

  test.each(['9223372036854775808', '99999999999999999999', '0', '-1', '00042', '1e5'])(
    'GET /tasks/%s → 404, never a 500 (item 10)',
    async (id) => {
      const res = await pollTask(gw, key, id);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ code: 4040, message: `task ${id} not found` });
    },
  );

  test('GraphQL task ids and cursors out of range answer null and a 400, not a database error (item 10)', async () => {
    const res = await graphql(
      gw,
      ADMIN,
      `
        {
          a: task(taskId: "9223372036854775808") {
            status
          }
          b: task(taskId: "gw-99999999999999999999") {
            status
          }
        }
      `,
    );
    expect(res.body).toEqual({ data: { a: null, b: null } });
    const cursor = Buffer.from('task:99999999999999999999').toString('base64url');
    const paged = await graphql(
      gw,
      ADMIN,
      `
        query ($c: String) {
          tasks(first: 2, after: $c) {
            edges {
              cursor
            }
          }
        }
      `,
      { c: cursor },
    );
    expect(paged.body.errors?.[0]).toMatchObject({
      message: 'after: not a cursor from this API',
      extensions: { code: 'BAD_USER_INPUT' },
    });
  });

  test('a path longer than the router takes → 414 in the one refusal shape (item 11)', async () => {
    const res = await pollTask(gw, key, '7'.repeat(300));
    expect(res.status).toBe(414);
    expect(res.body).toEqual({ code: 4140, message: 'the request path is too long' });
  });

  test('a NUL byte in a project name or an adjustment reason → BAD_USER_INPUT naming the field, not a PostgreSQL message (item 11)', async () => {
    const created = await graphql(
      gw,
      ADMIN,
      `
        mutation ($n: String!) {
          createProject(name: $n)
        }
      `,
      { n: 'a\u0000b' },
    );
    expect(created.body.errors?.[0]).toMatchObject({
      message: 'name: text must not contain the NUL character (U+0000)',
      extensions: { code: 'BAD_USER_INPUT' },
    });
    const adjusted = await graphql(
      gw,
      ADMIN,
      `
        mutation ($p: ID!, $r: String!) {
          adjustLedger(projectId: $p, unit: USD, amount: "1", reason: $r)
        }
      `,
      { p: projectId, r: 'refund\u0000' },
    );
    expect(adjusted.body.errors?.[0]).toMatchObject({
      message: 'reason: text must not contain the NUL character (U+0000)',
      extensions: { code: 'BAD_USER_INPUT' },
    });
    expect(JSON.stringify([created.body, adjusted.body])).not.toMatch(/0x00|invalid byte sequence/);
  });

  test('publishPrices refuses an unknown model and an effectiveAt in the past (item 11)', async () => {
    const publish = (at: string, model: string) =>
      graphql(
        gw,
        ADMIN,
        `
          mutation ($at: DateTime!, $m: String!) {
            publishPrices(
              effectiveAt: $at
              rates: [{ model: $m, unit: USD, component: "image", key: "2K", rate: "0.05" }]
            )
          }
        `,
        { at, m: model },
      );
    const unknown = await publish(new Date(Date.now() + 60_000).toISOString(), 'gpt-9000');
    expect(unknown.body.errors?.[0]).toMatchObject({
      message: 'rates[0].model: "gpt-9000" is not a model of the catalog',
      extensions: { code: 'BAD_USER_INPUT' },
    });
    const past = await publish('2026-01-01T00:00:00Z', 'seedream-5.0');
    expect(past.body.errors?.[0]?.message).toMatch(/^effectiveAt: 2026-01-01T00:00:00.000Z is in the past/);
    const versions = await graphql(gw, ADMIN, '{ priceBookVersions { version } }');
    expect(versions.body.data.priceBookVersions).toEqual([{ version: 1 }]);
  });

  test('CSV cells that a spreadsheet would run as formulas are neutralised, over HTTP and in `spendgate report` (item 9)', async () => {
    const names = ["=cmd|' /C calc'!A0", '+1+2', '-2+3', '@SUM(A1)'];
    for (const name of names) {
      const id = (
        await graphql(
          gw,
          ADMIN,
          `
            mutation ($n: String!) {
              createProject(name: $n)
            }
          `,
          { n: name },
        )
      ).body.data.createProject;
      await gw.db.query(`SELECT spendgate_adjust($1, 'USD', 1, 'seed', NULL, '2026-11-02T00:00:00Z')`, [id]);
    }
    const csv = await http(
      `${gw.url}/reports/spend.csv?from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z&groupBy=project`,
      { key: ADMIN },
    );
    for (const name of names) expect(csv.text).toContain(`"'${name.replaceAll('"', '""')}",USD,1,`);
    const cli = await run(
      process.execPath,
      ['dist/src/cli/main.js', 'report', '--from', '2026-11-01', '--to', '2026-12-01', '--group-by', 'project'],
      {
        env: { PATH: process.env.PATH, DATABASE_URL: gw.databaseUrl },
      },
    );
    for (const name of names) expect(cli.stdout).toContain(`"'${name}",USD,1,`);
    expect(cli.stdout).not.toMatch(/^[=+\-@]/m);
    // Every trigger character, and what stays as it is: exact (negative) amounts, a lone dash.
    expect(['\tx', '\rx', '=1', '-0.04', '-', 'plain', 12].map(csvCell)).toEqual([
      '"\'\tx"',
      '"\'\rx"',
      '"\'=1"',
      '-0.04',
      '-',
      'plain',
      '12',
    ]);
  });
});

test('anonymous introspection is refused in production; a token may still introspect; development allows it (item 11)', async () => {
  const url = await freshDatabase();
  const prod = await gateway(url, { NODE_ENV: 'production' });
  try {
    const query = '{ __schema { queryType { name } } }';
    const anonymous = await http<GraphqlAnswer<GraphqlData>>(`${prod.url}/graphql`, { body: { query } });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.errors?.[0]).toMatchObject({
      message: expect.stringMatching(/^introspection needs a valid token in production/),
    });
    expect(anonymous.body.data ?? null).toBeNull(); // not executed
    const viaFragment = await http(`${prod.url}/graphql`, {
      body: { query: '{ ...F } fragment F on Query { __type(name: "Task") { name } }' },
    });
    expect(viaFragment.status).toBe(401);
    const withToken = await graphql(prod, ADMIN, query);
    expect(withToken.body.data).toEqual({ __schema: { queryType: { name: 'Query' } } });
  } finally {
    await prod.close();
  }
  const dev = await gateway(url);
  try {
    expect((await http(`${dev.url}/graphql`, { body: { query: '{ __schema { queryType { name } } }' } })).status).toBe(
      200,
    );
  } finally {
    await dev.close();
  }
});
