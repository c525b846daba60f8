/**
 * A spendReport bar and its drill-down (taskTotals and tasks over the same posted range, decisions
 * §9, §13) count the same tasks, also where no money moved: a task a contract makes free (§19: held
 * 0, charged 0) is a task of its day in both, and a task the vendor refused (never ran: its hold
 * released whole, §4) is in neither. Found by the money model's tester (seed 1026170146:
 * `contract(nano-banana-pro -100%)`, then a settled nano-banana-pro task: the bar counted 1, its drill-down 0).
 */
import type { Gateway } from '../../src/bootstrap.js';
import {
  ADMIN,
  freshDatabase,
  gateway,
  graphql,
  http,
  pollTask,
  projectWithKey,
  submitGeneration,
} from '../support/harness.js';

let gw: Gateway;
let key: string;
let projectId: string;

beforeAll(async () => {
  gw = await gateway(await freshDatabase(), { SIMULATOR_DELAY_MS: '600000', POLLER_ENABLED: 'false' });
  ({ key, projectId } = await projectWithKey(gw));
});
afterAll(() => gw.close());

const month = () => {
  const now = new Date();
  return {
    f: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
    t: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
  };
};

interface Answer {
  spendReport: Array<{ tasks: number; totals: Array<{ amount: string }> }>;
  taskTotals: { tasks: number; totals: Array<{ unit: string; amount: string }> };
  tasks: { edges: Array<{ node: { taskId: string; status: string } }> };
}

/** The month's bar for the project (tasks and USD), and what its drill-down counts and lists. */
async function barAndDrillDown() {
  const res = await graphql<Answer>(
    gw,
    ADMIN,
    `
      query ($p: ID!, $f: DateTime!, $t: DateTime!) {
        spendReport(from: $f, to: $t, groupBy: ["project"], unit: USD, projectIds: [$p]) {
          tasks
          totals {
            amount
          }
        }
        taskTotals(filter: { projectIds: [$p], postedFrom: $f, postedTo: $t }) {
          tasks
          totals {
            unit
            amount
          }
        }
        tasks(filter: { projectIds: [$p], postedFrom: $f, postedTo: $t }, first: 100) {
          edges {
            node {
              taskId
              status
            }
          }
        }
      }
    `,
    { p: projectId, ...month() },
  );
  expect(res.body.errors).toBeUndefined();
  const { spendReport, taskTotals, tasks } = res.body.data!;
  return {
    bar: { tasks: spendReport[0]?.tasks ?? 0, amount: spendReport[0]?.totals[0]?.amount ?? '0' },
    drillDown: { tasks: taskTotals.tasks, amount: taskTotals.totals[0]?.amount ?? '0' },
    listed: tasks.edges.map((e) => `${e.node.taskId} ${e.node.status}`).sort(),
  };
}

test('a task a contract makes free is counted by the bar and its drill-down alike, and listed', async () => {
  const published = await graphql(
    gw,
    ADMIN,
    `
      mutation ($t: [ContractTermInput!]!) {
        publishContract(terms: $t, note: "nano-banana-pro free")
      }
    `,
    { t: [{ scope: 'model', value: 'nano-banana-pro', unit: 'USD', discountPercent: '100' }] },
  );
  expect(published.body.errors).toBeUndefined();
  const accepted = await submitGeneration(gw, key, { model: 'nano-banana-pro', prompt: 'a fox', resolution: '1K' });
  expect(accepted.status).toBe(200);
  const id = String((accepted.body as { data: { taskId: number } }).data.taskId);
  expect((await http(`${gw.simulatorUrl}/__sim/tasks/${id}/complete`, { body: { status: 'ready' } })).status).toBe(200);
  expect((await pollTask(gw, key, id)).status).toBe(200);
  const task = await graphql(
    gw,
    ADMIN,
    `
      query ($id: ID!) {
        task(taskId: $id) {
          status
          held
          charge {
            amount
          }
        }
      }
    `,
    { id },
  );
  expect(task.body.data!.task).toEqual({ status: 'ready', held: '0', charge: { amount: '0' } });

  expect(await barAndDrillDown()).toEqual({
    bar: { tasks: 1, amount: '0' },
    drillDown: { tasks: 1, amount: '0' },
    listed: [`${id} ready`],
  });
});

test('a task the vendor refused is in neither the bar nor its drill-down', async () => {
  const before = await barAndDrillDown();
  expect((await http(`${gw.simulatorUrl}/__sim/config`, { body: { errorRate: 1 } })).status).toBe(200);
  try {
    const refused = await submitGeneration(gw, key, { model: 'seedream-4.0', prompt: 'a fox', resolution: '2K' });
    expect(refused.status).toBe(502);
  } finally {
    await http(`${gw.simulatorUrl}/__sim/config`, { body: { errorRate: 0 } });
  }
  expect(await barAndDrillDown()).toEqual(before);
});
