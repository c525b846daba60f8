/**
 * A per-minute limit at a minute's turn (decisions §20), through the running gateway on a real
 * PostgreSQL. A hold reads its minute before it waits for the project's lock; another instance's
 * batch of the next minute may be counted meanwhile. The state that race leaves is written here
 * directly (the limit's row already at the next minute), then a request of this minute arrives:
 * it is counted in the row's minute, never moving the row back. Before, the batch path moved the
 * row back to this minute and began its count again, so the next minute lost what it had counted
 * and admitted up to twice its amount; a tokens-per-minute hold was then corrected in a row that
 * had moved on.
 */
import type { Gateway } from '../../src/bootstrap.js';
import { chatBody, imageBody } from '../support/builders.js';
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
} from '../support/harness.js';
import { awayFromMinuteEnd, setLimit } from '../support/limits.js';

let url: string;
let gw: Gateway;

beforeAll(async () => {
  url = await freshDatabase();
  gw = await gateway(url, { SIMULATOR_DELAY_MS: '600000' });
});
afterAll(async () => {
  await gw.close();
});

const minute = (offset: number) => new Date((Math.floor(Date.now() / 60_000) + offset) * 60_000).toISOString();

/** The limit's row as another instance's batch of the next minute would have left it. */
async function nextMinuteCounted(limitId: string, used: number) {
  await sql(
    gw,
    `INSERT INTO limit_use (limit_id, subject, window_start, used)
     VALUES ($1, '', date_trunc('minute', clock_timestamp()) + interval '1 minute', $2)`,
    [limitId, used],
  );
}

const row = async (limitId: string) =>
  sql(gw, `SELECT spendgate_iso(window_start) AS "window", used::int AS used FROM limit_use WHERE limit_id = $1`, [
    limitId,
  ]);

test('requests per minute: a request of this minute after the next one began counts in the next one; the row never moves back', async () => {
  const { projectId, key } = await projectWithKey(gw);
  const limitId = await setLimit(gw, projectId, 'REQUESTS_PER_MINUTE', 3);
  await awayFromMinuteEnd();
  await nextMinuteCounted(limitId, 2);

  const first = await submitGeneration(gw, key, imageBody());
  expect(first.status).toBe(200);
  expect(await row(limitId)).toEqual([{ window: minute(1), used: 3 }]);

  // The next minute is full: refused, saying when it admits more (the minute after), nothing written.
  const second = await submitGeneration(gw, key, imageBody());
  expect(second.status).toBe(429);
  expect(second.body).toMatchObject({
    code: 4290,
    details: { limitId, kind: 'REQUESTS_PER_MINUTE', limit: '3', used: '3', windowEnd: minute(2) },
  });
  expect(Number(second.headers.get('retry-after'))).toBeGreaterThan(60);
  expect(await row(limitId)).toEqual([{ window: minute(1), used: 3 }]);
  expect(await sql(gw, 'SELECT count(*)::int AS n FROM task WHERE project_id = $1', [projectId])).toEqual([{ n: 1 }]);

  // This minute's use shows none (what was admitted is counted in the next one).
  const use = await graphql(
    gw,
    ADMIN,
    `
      query ($p: ID!) {
        limits(projectId: $p) {
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
  expect(use.body.data!.limits).toEqual([{ use: [] }]);
});

test('chat tokens per minute: a hold counted in the next minute is corrected there at settlement', async () => {
  const { projectId, key } = await projectWithKey(gw);
  const limitId = await setLimit(gw, projectId, 'TOKENS_PER_MINUTE', 10_000);
  await awayFromMinuteEnd();
  await nextMinuteCounted(limitId, 50);

  const chat = await submitChat(gw, key, chatBody());
  expect(chat.status).toBe(200);
  const [{ used: counted }] = (await row(limitId)) as [{ used: number }];
  expect(counted).toBeGreaterThan(150); // 50, and the estimate: the prompt's tokens + max_tokens 100
  expect(
    await sql(gw, `SELECT spendgate_iso(window_start) AS "window" FROM limit_hold WHERE limit_id = $1`, [limitId]),
  ).toEqual([{ window: minute(1) }]);

  // The vendor counts 3 + 4 tokens: the next minute's row holds 50 + 7.
  await http(`${gw.simulatorUrl}/__sim/tasks/${chat.body.data.taskId}/complete`, {
    body: { status: 'ready', usage: { prompt_tokens: 3, completion_tokens: 4 } },
  });
  await pollTask(gw, key, chat.body.data.taskId);
  expect(await row(limitId)).toEqual([{ window: minute(1), used: 57 }]);
});
