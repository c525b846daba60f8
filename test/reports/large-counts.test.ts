/**
 * Counts past GraphQL's Int (common/counts.ts). A year's tasks of a busy organisation pass
 * 2,147,483,647 (68 a second); the reports summed them as `sum(tasks)::int`, and spendReport, the
 * dashboard and the spend CSV answered "internal error" (500) for such a range. The roll-up is
 * written here in SQL, as bench:history makes its years: two models of one project, two billion
 * tasks (and images, and unpriced tasks) each, today, and one credit-priced task beside them.
 * Every read now answers: the Int fields at most 2,147,483,647, the `…Exact` fields and the CSVs exact,
 * and the console's top lists show the exact count.
 */
import type { Browser } from 'playwright-core';
import { openBrowser, signIn } from '../../bench/browser.js';
import type { Gateway } from '../../src/bootstrap.js';
import { INT_MAX } from '../../src/common/counts.js';
import { acceptedTask, settleReady } from '../support/builders.js';
import { ADMIN, freshDatabase, gateway, graphql, http, projectWithKey, sql } from '../support/harness.js';

const BILLIONS = 2_000_000_000;
let gw: Gateway;
let project: string;
let range: string;
let query: string;
let today: string;
let browser: Browser | undefined;

beforeAll(async () => {
  gw = await gateway(await freshDatabase(), { SIMULATOR_DELAY_MS: '0' });
  ({ projectId: project } = await projectWithKey(gw));
  today = new Date().toISOString().slice(0, 10);
  for (const [model, unit, n] of [
    ['seedream-4.0', 'USD', BILLIONS],
    ['seedream-4.5', 'USD', BILLIONS],
    ['gpt-5.6-luna', 'CREDITS', 1],
  ] as const)
    await sql(
      gw,
      `INSERT INTO spend_rollup (day, project_id, model, unit, status, tasks, unpriced_tasks, amount, images)
       VALUES ($1, $2, $3, $4, 'ready', $5, $5, 1.25, $5)`,
      [today, project, model, unit, n],
    );
  const from = `${today}T00:00:00.000Z`;
  const to = new Date(Date.parse(from) + 86_400_000).toISOString();
  range = `from=${from}&to=${to}&projectIds=${project}`;
  query = `from: "${from}", to: "${to}", projectIds: ["${project}"]`;
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await gw.close();
});

const FOUR_BILLION_AND_ONE = String(2 * BILLIONS + 1);

test('spendReport: each count capped in its Int field and exact in its Exact field, in both units merged', async () => {
  const answer = await graphql(
    gw,
    ADMIN,
    `{ spendReport(${query}, groupBy: ["project"]) { tasks tasksExact unpricedTasks unpricedTasksExact images imagesExact totals { unit amount } } }`,
  );
  expect(answer.body.errors).toBeUndefined();
  // The form interfaces.md names, as a dashboard asks it: it answered "internal error" before.
  const named = await graphql(gw, ADMIN, `{ spendReport(${query}, groupBy: ["project"]) { tasks } }`);
  expect(named.body).toEqual({ data: { spendReport: [{ tasks: INT_MAX }] }, extensions: expect.anything() });
  expect(answer.body.data!.spendReport).toEqual([
    {
      tasks: INT_MAX,
      tasksExact: FOUR_BILLION_AND_ONE,
      unpricedTasks: INT_MAX,
      unpricedTasksExact: FOUR_BILLION_AND_ONE,
      images: INT_MAX,
      imagesExact: FOUR_BILLION_AND_ONE,
      totals: [
        { unit: 'CREDITS', amount: '1.25' },
        { unit: 'USD', amount: '2.5' },
      ],
    },
  ]);
  // An Exact field alone still reads its measure (the resolver picks what to sum from the selection).
  const alone = await graphql(
    gw,
    ADMIN,
    `{ spendReport(${query}, groupBy: ["model"], unit: USD) { keys imagesExact unpricedTasksExact } }`,
  );
  expect(alone.body.data!.spendReport).toEqual([
    { keys: ['seedream-4.0'], imagesExact: '2000000000', unpricedTasksExact: '2000000000' },
    { keys: ['seedream-4.5'], imagesExact: '2000000000', unpricedTasksExact: '2000000000' },
  ]);
});

test("the dashboard's top projects and the converted report answer, capped and exact", async () => {
  const dashboard = await graphql(
    gw,
    ADMIN,
    `
      {
        dashboard {
          topProjects {
            unit
            tasks
            tasksExact
          }
        }
      }
    `,
  );
  expect(dashboard.body.errors).toBeUndefined();
  expect(dashboard.body.data!.dashboard.topProjects).toEqual([
    { unit: 'CREDITS', tasks: 1, tasksExact: '1' },
    { unit: 'USD', tasks: INT_MAX, tasksExact: String(2 * BILLIONS) },
  ]);
  const converted = await graphql(
    gw,
    ADMIN,
    `{ convertedSpend(${query}, currency: "USD", groupBy: ["project"]) { rows { unit tasks tasksExact } } }`,
  );
  expect(converted.body.errors).toBeUndefined();
  expect(converted.body.data!.convertedSpend.rows).toEqual([
    { unit: 'CREDITS', tasks: 1, tasksExact: '1' },
    { unit: 'USD', tasks: INT_MAX, tasksExact: String(2 * BILLIONS) },
  ]);
});

test('the CSVs carry the exact counts', async () => {
  const spend = await http(`${gw.url}/reports/spend.csv?${range}&groupBy=project`, { key: ADMIN });
  expect(spend.status).toBe(200);
  const [header, ...rows] = spend.text.trim().split('\n');
  const column = (name: string) => header!.split(',').indexOf(name);
  const usd = rows.find((r) => r.includes(',USD,'))!.split(',');
  expect([usd[column('tasks')], usd[column('unpriced_tasks')], usd[column('images')]]).toEqual([
    String(2 * BILLIONS),
    String(2 * BILLIONS),
    String(2 * BILLIONS),
  ]);
  const converted = await http(`${gw.url}/reports/converted.csv?${range}&currency=USD&groupBy=project`, { key: ADMIN });
  expect(converted.status).toBe(200);
  expect(converted.text).toContain(`,USD,2.5,${2 * BILLIONS},`);
});

test("the console's top projects show the exact count", async () => {
  browser = await openBrowser();
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await signIn(page, gw.url, ADMIN);
  await page.goto(`${gw.url}/console/#/overview?from=${today}&to=${today}`);
  const usd = page.locator('[data-testid=top-projects] tr[data-key]').filter({ has: page.locator('[data-unit=USD]') });
  await usd.waitFor();
  expect(await usd.locator('td').nth(1).textContent()).toBe('4,000,000,000 tasks');
});

// Last: its project's settlement would join the lists the tests above read whole.
test("a month's roll-up by end user counts past 2^31: the settlement that takes it there settles", async () => {
  // The monthly roll-ups by end user (one row a month for a project's tasks without a user, one for a user
  // over projects) held int counts: a project settling 828 tasks a second for a month (83 a second of
  // ten-image tasks) reached the bound, and every later settlement of that month failed on "integer out of range".
  const { projectId } = await projectWithKey(gw);
  const month = `${today.slice(0, 7)}-01`;
  await sql(
    gw,
    `INSERT INTO spend_rollup_user (period, project_id, value, unit, tasks, unpriced_tasks, images)
     VALUES ($1, $2, 'heavy-user', 'USD', $3, $3, $3), ($1, $2, '', 'USD', $3, $3, $3)`,
    [month, projectId, INT_MAX],
  );
  await sql(
    gw,
    `INSERT INTO spend_rollup_user_all (period, value, unit, tasks, unpriced_tasks, images) VALUES ($1, 'heavy-user', 'USD', $2, $2, $2)`,
    [month, INT_MAX],
  );
  for (const [n, endUser] of [
    ['1', 'heavy-user'],
    ['2', undefined],
  ] as const) {
    const upstream = `99000000${n}`;
    await acceptedTask(gw, { projectId, upstreamTaskId: upstream, ...(endUser ? { endUser } : {}) });
    expect(await settleReady(gw, projectId, upstream)).toBe(true);
  }
  const next = new Date(Date.UTC(Number(today.slice(0, 4)), Number(today.slice(5, 7)), 1)).toISOString();
  const byUser = await graphql(
    gw,
    ADMIN,
    `{ own: spendReport(from: "${month}T00:00:00Z", to: "${next}", projectIds: ["${projectId}"], groupBy: ["user"]) { keys tasks tasksExact imagesExact }
       all: spendReport(from: "${month}T00:00:00Z", to: "${next}", groupBy: ["user"], users: ["heavy-user"]) { keys tasksExact imagesExact } }`,
  );
  expect(byUser.body.errors).toBeUndefined();
  const past = String(INT_MAX + 1);
  expect(byUser.body.data!.own).toEqual([
    { keys: ['(none)'], tasks: INT_MAX, tasksExact: past, imagesExact: past },
    { keys: ['heavy-user'], tasks: INT_MAX, tasksExact: past, imagesExact: past },
  ]);
  expect(byUser.body.data!.all).toEqual([{ keys: ['heavy-user'], tasksExact: past, imagesExact: past }]);
});
