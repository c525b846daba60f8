/**
 * Budgets on part of the catalog (decisions §20), through the running gateways on one PostgreSQL:
 * a cap on one model admits exactly what fits over two instances while another model passes; a
 * cap on a kind for each end user counts only that kind, per user; settlement and release move
 * only the budgets that count the task, and reconcile derives every balance from the ledger; a
 * bad model scope is a 400 naming it, with nothing written.
 */
import type { Gateway } from '../../src/bootstrap.js';
import { reconcile } from '../../src/ledger/reconcile.js';
import { imageBody, videoBody } from '../support/builders.js';
import {
  ADMIN,
  freshDatabase,
  gateway,
  graphql,
  http,
  pollTask,
  projectWithKey,
  sql,
  submitGeneration,
} from '../support/harness.js';

let a: Gateway;
let b: Gateway;

beforeAll(async () => {
  const url = await freshDatabase();
  a = await gateway(url, { SIMULATOR_DELAY_MS: '600000' });
  b = await gateway(url, { SIMULATOR_DELAY_MS: '600000' });
});
afterAll(async () => {
  await a.close();
  await b.close();
});

async function setBudget(projectId: string, args: string) {
  return graphql(a, ADMIN, `mutation ($p: ID!) { setBudget(projectId: $p, hard: true, ${args}) }`, { p: projectId });
}

test('a cap on one model: exactly what fits of it over two instances, another model unaffected, the 402 names the model', async () => {
  const { projectId, key } = await projectWithKey(a);
  const made = await setBudget(
    projectId,
    `unit: USD, limit: "0.40", period: DAILY, modelScope: MODEL, modelValue: "seedream-4.0"`,
  );
  expect(made.body.errors).toBeUndefined();
  const budgetId = made.body.data!.setBudget as string;
  const seedream = imageBody(); // 0.04 USD: 10 fit
  const other = imageBody({ model: 'nano-banana-pro', resolution: '2K' });
  const results = await Promise.all(
    Array.from({ length: 200 }, (_, i) => submitGeneration(i % 2 ? b : a, key, i % 4 < 2 ? seedream : other)),
  );
  const of = (model: string, status: number) =>
    results.filter((r, i) => (i % 4 < 2 ? 'seedream-4.0' : 'nano-banana-pro') === model && r.status === status).length;
  expect([of('seedream-4.0', 200), of('seedream-4.0', 402)]).toEqual([10, 90]);
  expect(of('nano-banana-pro', 200)).toBe(100);
  const refusal = results.find((r) => r.status === 402)!;
  expect(refusal.body).toMatchObject({
    code: 4020,
    message: expect.stringContaining(
      `budget ${budgetId} (seedream-4.0 only, daily, hard limit 0.4 USD) would be exceeded`,
    ),
    details: { budgetId, modelScope: 'MODEL', modelValue: 'seedream-4.0', remaining: '0.00' },
  });
  const status = await graphql(
    a,
    ADMIN,
    `
      query ($p: ID!) {
        budgetStatus(projectId: $p) {
          modelScope
          modelValue
          spent
          held
        }
      }
    `,
    { p: projectId },
  );
  expect(status.body.data!.budgetStatus).toEqual([
    { modelScope: 'MODEL', modelValue: 'seedream-4.0', spent: '0', held: '0.4' },
  ]);
  const [tasks] = await sql(a, `SELECT count(*)::int AS n FROM task WHERE project_id = $1`, [projectId]);
  expect(tasks).toEqual({ n: 110 });
  expect(await reconcile(a.db)).toEqual([]);
});

test('each end user at most 1 USD a day of video: only video counts, per user; settling and a refusal by the vendor move only it', async () => {
  const { projectId, key } = await projectWithKey(a);
  const made = await setBudget(
    projectId,
    `unit: USD, limit: "1", period: DAILY, scope: EACH_USER, modelScope: KIND, modelValue: "video"`,
  );
  expect(made.body.errors).toBeUndefined();
  const as = (user: string, body: unknown, gw = a) => submitGeneration(gw, key, body, { 'x-spendgate-user': user });
  // sora-2-pro 10 s is 0.48 USD: two fit each user's 1 USD; images are not video.
  const ann = [await as('ann', videoBody()), await as('ann', videoBody(), b), await as('ann', videoBody())];
  expect(ann.map((r) => r.status)).toEqual([200, 200, 402]);
  expect(ann[2]!.body).toMatchObject({ code: 4020, details: { user: 'ann', modelScope: 'KIND', modelValue: 'video' } });
  expect((await as('ann', imageBody())).status).toBe(200);
  expect((await as('bob', videoBody(), b)).status).toBe(200);

  // One of ann's videos settles at 0.48; the other is refused by the vendor and released.
  const first = ann[0]!.body.data.taskId as number;
  await http(`${a.simulatorUrl}/__sim/tasks/${first}/complete`, { body: { status: 'ready' } });
  expect((await pollTask(a, key, first)).body.data.status).toBe('ready');
  await http(`${a.simulatorUrl}/__sim/config`, { body: { errorRate: 1 } });
  expect((await as('bob', videoBody())).status).toBe(502); // held, refused upstream, released
  await http(`${a.simulatorUrl}/__sim/config`, { body: { errorRate: 0 } });
  const users = await graphql(
    a,
    ADMIN,
    `
      query ($p: ID!) {
        budgetStatus(projectId: $p) {
          users(first: 10) {
            edges {
              node {
                user
                spent
                held
              }
            }
          }
        }
      }
    `,
    { p: projectId },
  );
  expect(users.body.data!.budgetStatus[0]!.users!.edges.map((e) => e.node)).toEqual([
    { user: 'ann', spent: '0.48', held: '0.48' },
    { user: 'bob', spent: '0', held: '0.48' },
  ]);
  expect(await reconcile(a.db)).toEqual([]);
});

test('a bad model scope is a 400 naming it, and nothing is written', async () => {
  const { projectId } = await projectWithKey(a);
  const refused: Array<[string, RegExp]> = [
    [
      `unit: USD, limit: "1", period: DAILY, modelScope: MODEL, modelValue: "seedream-9"`,
      /modelValue: "seedream-9" is not a model of the catalog/,
    ],
    [
      `unit: USD, limit: "1", period: DAILY, modelScope: KIND, modelValue: "audio"`,
      /is not a kind of the catalog \(one of chat, image, video\)/,
    ],
    [
      `unit: USD, limit: "1", period: DAILY, modelScope: FAMILY`,
      /modelValue: a FAMILY budget needs the family it counts/,
    ],
    [`unit: USD, limit: "1", period: DAILY, modelValue: "seedream-4.0"`, /modelValue: give modelScope/],
    [
      `unit: USD, limit: "1", period: DAILY, modelScope: KIND, modelValue: "chat"`,
      /unit: chat is priced in CREDITS, not USD/,
    ],
  ];
  for (const [args, message] of refused) {
    const res = await setBudget(projectId, args);
    expect(res.body.errors?.[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT' } });
    expect(res.body.errors?.[0]?.message).toMatch(message);
  }
  expect(await sql(a, 'SELECT count(*)::int AS n FROM budget WHERE project_id = $1', [projectId])).toEqual([{ n: 0 }]);
});
