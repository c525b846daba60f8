/**
 * Limits (decisions §20) through the running gateways, on one real PostgreSQL: 200 concurrent
 * submissions over two instances against each kind admit exactly the limit, the rest 429 with
 * Retry-After in the one error shape and nothing written; tasks in flight are freed as tasks
 * settle, fail, are refused by the vendor and are released by review; chat tokens are estimated
 * at admission and corrected at settlement; a limit and a budget on one request: the tighter
 * refuses, with its own code; the API refuses bad limits with 400s, lists use, and audits changes.
 */
import type { Gateway } from '../../src/bootstrap.js';
import { reconcile } from '../../src/ledger/reconcile.js';
import { chatBody, imageBody } from '../support/builders.js';
import {
  ADMIN,
  eventually,
  freshDatabase,
  gateway,
  graphql,
  hardBudget,
  http,
  pollTask,
  projectWithKey,
  sql,
  submitChat,
  submitGeneration,
} from '../support/harness.js';
import { awayFromMinuteEnd, setLimit } from '../support/limits.js';

let url: string;
let a: Gateway;
let b: Gateway;

beforeAll(async () => {
  url = await freshDatabase();
  a = await gateway(url, { SIMULATOR_DELAY_MS: '600000' });
  b = await gateway(url, { SIMULATOR_DELAY_MS: '600000' });
});
afterAll(async () => {
  await a.close();
  await b.close();
});

/** What a project has written: tasks, ledger entries (a refusal writes neither). */
async function written(projectId: string) {
  const [row] = await sql(
    a,
    `SELECT (SELECT count(*)::int FROM task WHERE project_id = $1) AS tasks,
            (SELECT count(*)::int FROM ledger_entry WHERE project_id = $1) AS entries`,
    [projectId],
  );
  return row;
}

/** 200 submissions at once, alternating the two instances. */
const burst = (key: string, body: unknown, submit = submitGeneration) =>
  Promise.all(Array.from({ length: 200 }, (_, i) => submit(i % 2 ? b : a, key, body)));

test('requests per minute: 200 at once over two instances, exactly the limit admitted, the rest 429 with nothing written', async () => {
  const { projectId, key } = await projectWithKey(a);
  const limitId = await setLimit(a, projectId, 'REQUESTS_PER_MINUTE', 30);
  await awayFromMinuteEnd();
  const results = await burst(key, imageBody());
  const admitted = results.filter((r) => r.status === 200);
  const refused = results.filter((r) => r.status === 429);
  expect([admitted.length, refused.length]).toEqual([30, 170]);
  const retryAfter = Number(refused[0]!.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
  expect(refused[0]!.body).toMatchObject({
    code: 4290,
    message: expect.stringMatching(
      new RegExp(
        `^limit ${limitId} \\(project, 30 requests a minute\\) is reached: 30 counted this minute: it admits more from`,
      ),
    ),
    details: { limitId, kind: 'REQUESTS_PER_MINUTE', scope: 'PROJECT', limit: '30', used: '30' },
  });
  expect(await written(projectId)).toEqual({ tasks: 30, entries: 30 });
  const use = await graphql(
    a,
    ADMIN,
    `
      query ($p: ID!) {
        limits(projectId: $p) {
          id
          kind
          amount
          use {
            subject
            used
          }
        }
      }
    `,
    {
      p: projectId,
    },
  );
  expect(use.body.data!.limits).toEqual([
    { id: limitId, kind: 'REQUESTS_PER_MINUTE', amount: 30, use: [{ subject: '', used: 30 }] },
  ]);
  // The first refusal in the minute is one event, however many refusals and instances.
  const events = await sql(
    a,
    `SELECT count(*)::int AS n FROM outbox_event WHERE type = 'limit.refused' AND project_id = $1`,
    [projectId],
  );
  expect(events).toEqual([{ n: 1 }]);
  expect(await reconcile(a.db)).toEqual([]);
});

test('tasks in flight per API key: exactly the limit admitted; settling, failing, a vendor refusal and a review release free it', async () => {
  const { projectId, key } = await projectWithKey(a);
  const prefix = key.slice(3, 15);
  const limitId = await setLimit(a, projectId, 'TASKS_IN_FLIGHT', 10, 'API_KEY', prefix);
  const results = await burst(key, imageBody());
  const admitted = results.filter((r) => r.status === 200);
  expect([admitted.length, results.filter((r) => r.status === 429).length]).toEqual([10, 190]);
  const refusal = results.find((r) => r.status === 429)!;
  expect(refusal.headers.get('retry-after')).toBe('1');
  expect(refusal.body).toMatchObject({
    code: 4290,
    message: expect.stringContaining(
      '10 tasks are in flight: it admits another when one of them settles, fails or is released',
    ),
    details: { limitId, kind: 'TASKS_IN_FLIGHT', scope: 'API_KEY', scopeValue: prefix, limit: '10', used: '10' },
  });
  expect(await written(projectId)).toEqual({ tasks: 10, entries: 10 });

  // Each task at the vendor (the simulator) of the instance that sent it.
  const ids = results.flatMap((r, i) =>
    r.status === 200 ? [{ id: r.body.data.taskId as number, gw: i % 2 ? b : a }] : [],
  );
  const finish = async (t: { id: number; gw: Gateway }, status: 'ready' | 'failed') => {
    await http(`${t.gw.simulatorUrl}/__sim/tasks/${t.id}/complete`, { body: { status } });
    expect((await pollTask(t.gw, key, t.id)).body.data.status).toBe(status);
  };
  const oneMore = () => submitGeneration(a, key, imageBody());
  await finish(ids[0]!, 'ready'); // settled
  expect((await oneMore()).status).toBe(200);
  expect((await oneMore()).status).toBe(429);
  await finish(ids[1]!, 'failed'); // failed
  expect((await oneMore()).status).toBe(200);
  expect((await oneMore()).status).toBe(429);

  // Refused by the vendor: released at once, so it never stays in flight.
  await http(`${a.simulatorUrl}/__sim/config`, { body: { errorRate: 1 } });
  await finish(ids[2]!, 'ready');
  expect((await oneMore()).status).toBe(502); // admitted, then refused upstream and released
  await http(`${a.simulatorUrl}/__sim/config`, { body: { errorRate: 0 } });
  expect((await oneMore()).status).toBe(200);

  // Released by review: a task of unknown outcome (the vendor never answered) holds its place until then.
  const hanging = await gateway(url, {
    SIMULATOR_DELAY_MS: '600000',
    UPSTREAM_TIMEOUT_MS: '500',
    UPSTREAM_CONNECT_TIMEOUT_MS: '100',
    SUBMIT_GRACE_MS: '0',
  });
  try {
    await finish(ids[3]!, 'ready');
    await http(`${hanging.simulatorUrl}/__sim/config`, { body: { hangRate: 1 } });
    const lost = await submitGeneration(hanging, key, imageBody());
    expect(lost.status).toBe(504);
    expect((await oneMore()).status).toBe(429);
    const [task] = await sql(a, `SELECT id::text FROM task WHERE project_id = $1 AND status = 'unknown'`, [projectId]);
    const released = await graphql(
      a,
      ADMIN,
      `
        mutation ($t: ID!) {
          resolveTask(taskId: $t, outcome: RELEASE, reason: "never reached the vendor") {
            status
          }
        }
      `,
      { t: `gw-${task!.id}` },
    );
    expect(released.body.errors).toBeUndefined();
    expect((await oneMore()).status).toBe(200);
  } finally {
    await hanging.close();
  }
  const [inFlight] = await sql(a, 'SELECT count(*)::int AS n FROM limit_hold WHERE limit_id = $1', [limitId]);
  expect(inFlight).toEqual({ n: 10 });
  expect(await reconcile(a.db)).toEqual([]);
});

test('chat tokens per minute: estimated at admission, corrected at settlement', async () => {
  const { projectId, key } = await projectWithKey(a);
  await awayFromMinuteEnd(30);
  const limitId = await setLimit(a, projectId, 'TOKENS_PER_MINUTE', 500);
  const first = await submitChat(a, key, chatBody()); // estimated: the prompt's tokens + max_tokens 100
  expect(first.status).toBe(200);
  const [estimate] = await sql(a, 'SELECT used::int AS used FROM limit_use WHERE limit_id = $1', [limitId]);
  expect(estimate!.used).toBeGreaterThan(100);
  // The vendor reports 3 + 4 tokens: the minute counts 7 from now on.
  await http(`${a.simulatorUrl}/__sim/tasks/${first.body.data.taskId}/complete`, {
    body: { status: 'ready', usage: { prompt_tokens: 3, completion_tokens: 4 } },
  });
  await pollTask(a, key, first.body.data.taskId);
  expect(await sql(a, 'SELECT used::int AS used FROM limit_use WHERE limit_id = $1', [limitId])).toEqual([{ used: 7 }]);
  const results = await Promise.all(Array.from({ length: 20 }, (_, i) => submitChat(i % 2 ? b : a, key, chatBody())));
  const admitted = results.filter((r) => r.status === 200).length;
  expect(admitted).toBe(Math.floor((500 - 7) / estimate!.used));
  const refusal = results.find((r) => r.status === 429)!;
  expect(refusal.body).toMatchObject({ code: 4290, details: { kind: 'TOKENS_PER_MINUTE', limit: '500' } });
  // A request whose estimate alone passes the limit never fits, and says so.
  const huge = await submitChat(a, key, chatBody({ max_tokens: 4000 }));
  expect(huge.status).toBe(429);
  expect(huge.body.message).toMatch(/this request alone is estimated at \d+ tokens: it never fits/);
});

test("a vendor's count past GraphQL's Int: the use is read, capped in used and exact in usedExact", async () => {
  const { projectId, key } = await projectWithKey(a);
  await awayFromMinuteEnd(30);
  await setLimit(a, projectId, 'TOKENS_PER_MINUTE', 500);
  const task = await submitChat(a, key, chatBody());
  expect(task.status).toBe(200);
  // The vendor reports three billion output tokens: the minute's count is corrected to them.
  await http(`${a.simulatorUrl}/__sim/tasks/${task.body.data.taskId}/complete`, {
    body: { status: 'ready', usage: { prompt_tokens: 3, completion_tokens: 3_000_000_000 } },
  });
  await pollTask(a, key, task.body.data.taskId);
  const use = await graphql(a, ADMIN, 'query ($p: ID!) { limits(projectId: $p) { use { subject used usedExact } } }', {
    p: projectId,
  });
  expect(use.body.errors).toBeUndefined();
  expect(use.body.data!.limits).toEqual([{ use: [{ subject: '', used: 2147483647, usedExact: '3000000003' }] }]);
  const next = await submitChat(b, key, chatBody());
  expect(next.status).toBe(429);
  expect(next.body.details).toMatchObject({ kind: 'TOKENS_PER_MINUTE', used: '3000000003' });
});

test('a limit and a budget on one request: the tighter refuses, with its own code', async () => {
  const budgeted = await projectWithKey(a);
  await hardBudget(a.url, budgeted.projectId, '0.08'); // two images
  await setLimit(a, budgeted.projectId, 'REQUESTS_PER_MINUTE', 5);
  await awayFromMinuteEnd();
  const byBudget = [];
  for (let i = 0; i < 3; i++) byBudget.push(await submitGeneration(a, budgeted.key, imageBody()));
  expect(byBudget.map((r) => r.status)).toEqual([200, 200, 402]);
  expect(byBudget[2]!.body.code).toBe(4020);

  const limited = await projectWithKey(a);
  await hardBudget(a.url, limited.projectId, '1.00');
  await setLimit(a, limited.projectId, 'REQUESTS_PER_MINUTE', 2);
  const byLimit = [];
  for (let i = 0; i < 3; i++) byLimit.push(await submitGeneration(a, limited.key, imageBody()));
  expect(byLimit.map((r) => r.status)).toEqual([200, 200, 429]);
  expect(byLimit[2]!.body.code).toBe(4290);
  // The refused request holds nothing: the budget has the two admitted images.
  const [period] = await sql(
    a,
    'SELECT held::text FROM budget_period p JOIN budget x ON x.id = p.budget_id WHERE x.project_id = $1',
    [limited.projectId],
  );
  expect(period).toEqual({ held: '0.08' });
});

test('each end user has their own count; bad limits are 400s naming the argument; changes are audited', async () => {
  const { projectId, key } = await projectWithKey(a);
  const limitId = await setLimit(a, projectId, 'REQUESTS_PER_MINUTE', 1, 'EACH_USER');
  await awayFromMinuteEnd();
  const as = (user: string) => submitGeneration(a, key, imageBody(), { 'x-spendgate-user': user });
  expect([(await as('ann')).status, (await as('bob')).status, (await as('ann')).status]).toEqual([200, 200, 429]);
  // Refusals of new users are announced one by one up to 10 a window, then once more, capped (decisions §8).
  for (let u = 0; u < 11; u++) {
    await as(`user-${u}`);
    expect((await as(`user-${u}`)).status).toBe(429);
  }
  const events = async () =>
    sql(
      a,
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE payload::jsonb -> 'data' ->> 'capped' = 'true')::int AS capped
       FROM outbox_event WHERE type = 'limit.refused' AND project_id = $1`,
      [projectId],
    );
  await eventually(async () => (await events())[0]!.n === 11);
  expect(await events()).toEqual([{ n: 11, capped: 1 }]); // ann and 9 more, then one capped event

  const refused: Array<[string, RegExp]> = [
    [`kind: REQUESTS_PER_MINUTE, amount: 0`, /amount: a whole number from 1 to 2000000000/],
    [`kind: TASKS_IN_FLIGHT, amount: 5, scope: API_KEY`, /scopeValue: an API_KEY limit needs the key's public prefix/],
    [`kind: TASKS_IN_FLIGHT, amount: 5, scope: API_KEY, scopeValue: "000000000000"`, /no API key with prefix/],
    [`kind: TASKS_IN_FLIGHT, amount: 5, scope: TAG, scopeValue: "nonsense"`, /scopeValue/],
    [`kind: TASKS_IN_FLIGHT, amount: 5, scopeValue: "x"`, /a PROJECT limit counts the whole project/],
  ];
  for (const [args, message] of refused) {
    const res = await graphql(a, ADMIN, `mutation ($p: ID!) { setLimit(projectId: $p, ${args}) }`, { p: projectId });
    expect(res.body.errors?.[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT' } });
    expect(res.body.errors?.[0]?.message).toMatch(message);
  }
  expect(await sql(a, 'SELECT count(*)::int AS n FROM usage_limit WHERE project_id = $1', [projectId])).toEqual([
    { n: 1 },
  ]);

  // Setting the same kind and scope again changes the amount; deleting frees the project.
  expect(await setLimit(a, projectId, 'REQUESTS_PER_MINUTE', 2, 'EACH_USER')).toBe(limitId);
  expect((await as('ann')).status).toBe(200);
  const deleted = await graphql(
    a,
    ADMIN,
    `
      mutation ($l: ID!) {
        deleteLimit(limitId: $l)
      }
    `,
    { l: limitId },
  );
  expect(deleted.body.data).toEqual({ deleteLimit: true });
  expect((await as('ann')).status).toBe(200);
  const audit = await sql(
    a,
    `SELECT action, coalesce(before::text, 'null') <> 'null' AS had_before FROM audit_record WHERE target_id = $1 ORDER BY seq`,
    [limitId],
  );
  expect(audit).toEqual([
    { action: 'limit.set', had_before: false },
    { action: 'limit.set', had_before: true },
    { action: 'limit.delete', had_before: true },
  ]);
});
