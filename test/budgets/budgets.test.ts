/**
 * Budgets under concurrency, on real PostgreSQL: exactly K of 200 concurrent submissions fit a
 * hard budget (one instance and two instances on one database), spent + held never passes the
 * limit at any sampled moment, settlement raced by polls and the poller charges once, a crash
 * between hold and upstream answer leaves a held `unknown` task, and reconcile stays clean.
 */
import pg from 'pg';
import type { Gateway } from '../../src/bootstrap.js';
import { BudgetStatusService } from '../../src/budgets/budget-status.service.js';
import { dec } from '../../src/pricing/money.js';
import { SettlementService } from '../../src/tasks/settlement.service.js';
import { TaskStore } from '../../src/tasks/task-store.js';
import { reconcile } from '../../src/ledger/reconcile.js';
import { acceptedTask, heldTask, holdFor, imageBody, settleReady, videoBody } from '../support/builders.js';
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
  submitGeneration,
} from '../support/harness.js';

const IMAGE_1K = { model: 'seedream-4.0', prompt: 'budget test' }; // 0.04 USD each, exact

async function setBudget(gw: Gateway, projectId: string, limit: string, hard = true, period = 'MONTHLY') {
  const res = await graphql(
    gw,
    ADMIN,
    `
      mutation ($p: ID!, $l: Decimal!, $h: Boolean!, $per: Period!) {
        setBudget(projectId: $p, unit: USD, limit: $l, period: $per, hard: $h)
      }
    `,
    {
      p: projectId,
      l: limit,
      h: hard,
      per: period,
    },
  );
  expect(res.body.errors).toBeUndefined();
  return res.body.data!.setBudget as string;
}

/** Samples spent + held of every budget period row while `work` runs; returns the maximum seen. */
async function maxUsedDuring(gw: Gateway, work: Promise<unknown>): Promise<number[]> {
  const seen: string[] = [];
  let done = false;
  const sampler = (async () => {
    while (!done) {
      const rows = await sql(gw, 'SELECT (spent + held)::text AS used FROM budget_period');
      seen.push(...rows.map((r) => r.used));
      await new Promise((r) => setTimeout(r, 2));
    }
  })();
  await work;
  done = true;
  await sampler;
  return seen.map(Number); // comparison only, against a limit of a few cents
}

describe('hard budget, 200 concurrent submissions', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await gateway(await freshDatabase(), { SIMULATOR_DELAY_MS: '600000' });
  });
  afterAll(() => gw.close());

  test('exactly K accepted, the rest 402 naming the budget, never over the limit', async () => {
    const { projectId, key } = await projectWithKey(gw);
    const budgetId = await setBudget(gw, projectId, '1.00'); // K = 1.00 / 0.04 = 25
    const work = Promise.all(Array.from({ length: 200 }, () => submitGeneration(gw, key, IMAGE_1K)));
    const used = await maxUsedDuring(gw, work);
    const results = await work;
    const accepted = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 402);
    expect(accepted).toHaveLength(25);
    expect(refused).toHaveLength(175);
    expect(Math.max(...used)).toBeLessThanOrEqual(1.0);
    expect(refused[0]!.body).toMatchObject({
      code: 4020,
      message: expect.stringMatching(
        new RegExp(`budget ${budgetId} \\(monthly, hard limit 1 USD\\) would be exceeded`),
      ),
      details: { budgetId, limit: '1', remaining: '0.00', unit: 'USD', estimate: '0.04' },
    });
    const [row] = await sql(gw, 'SELECT spent::text, held::text FROM budget_period WHERE budget_id = $1', [budgetId]);
    expect(row).toEqual({ spent: '0', held: '1.00' }); // 25 × 0.04
    // Refusals leave no task and no hold behind.
    const [counts] = await sql(
      gw,
      `SELECT count(*)::int AS tasks, (SELECT count(*)::int FROM ledger_entry WHERE project_id = $1) AS entries FROM task WHERE project_id = $1`,
      [projectId],
    );
    expect(counts).toEqual({ tasks: 25, entries: 25 });
    expect(await reconcile(gw.db)).toEqual([]);
  });

  test('a soft budget lets requests through and records each threshold crossing once', async () => {
    const { projectId, key } = await projectWithKey(gw);
    const budgetId = await setBudget(gw, projectId, '0.20', false); // thresholds 50/80/100 %
    const results = await Promise.all(Array.from({ length: 8 }, () => submitGeneration(gw, key, IMAGE_1K)));
    expect(results.every((r) => r.status === 200)).toBe(true);
    const alerts = await sql(gw, 'SELECT threshold FROM budget_alert WHERE budget_id = $1 ORDER BY threshold', [
      budgetId,
    ]);
    expect(alerts.map((a) => a.threshold)).toEqual([50, 80, 100]);
    const status = await graphql(
      gw,
      ADMIN,
      `
        query ($p: ID!) {
          budgetStatus(projectId: $p) {
            held
            spent
            remaining
            hard
          }
        }
      `,
      { p: projectId },
    );
    expect(status.body.data!.budgetStatus).toEqual([{ held: '0.32', spent: '0', remaining: '-0.12', hard: false }]);
  });
});

test('two gateway instances on one database: exactly K accepted in total', async () => {
  const url = await freshDatabase();
  const a = await gateway(url, { SIMULATOR_DELAY_MS: '600000' });
  const b = await gateway(url, { SIMULATOR_DELAY_MS: '600000' });
  try {
    const { projectId, key } = await projectWithKey(a);
    await setBudget(a, projectId, '2.00'); // K = 50
    const work = Promise.all(Array.from({ length: 200 }, (_, i) => submitGeneration(i % 2 ? a : b, key, IMAGE_1K)));
    const used = await maxUsedDuring(a, work);
    const results = await work;
    expect(results.filter((r) => r.status === 200)).toHaveLength(50);
    expect(results.filter((r) => r.status === 402)).toHaveLength(150);
    expect(Math.max(...used)).toBeLessThanOrEqual(2.0);
    expect(await reconcile(a.db)).toEqual([]);
  } finally {
    await a.close();
    await b.close();
  }
});

test('hold batches write their tasks before the project lock: two batches of one project in flight, rows unseen until they fit', async () => {
  const url = await freshDatabase();
  const gw = await gateway(url, { SIMULATOR_DELAY_MS: '600000' });
  const blocker = new pg.Client({ connectionString: url });
  await blocker.connect();
  try {
    const { projectId } = await projectWithKey(gw);
    await setBudget(gw, projectId, '0.40'); // 10 of the 64 below fit
    // What a batch holding the project's lock looks like to the next ones: the lock, held.
    await blocker.query('BEGIN');
    await blocker.query('SELECT spendgate_lock_project($1)', [projectId]);
    // The 64 holds pushed in one turn of the event loop, where batches form (LedgerService): a burst
    // of 48 or more with nothing in flight goes out as two halves, each writing its rows and then
    // waiting for the lock. Through HTTP the requests arrive as the machine lets them: a first batch
    // of one (which takes the lock before it writes) or of 41 to 47 (which leaves too few for a
    // second) made this test wait for two batches that never came (a fresh-clone CI run, 2026-12-03).
    const work = Promise.all(Array.from({ length: 64 }, () => holdFor(gw, { projectId, body: IMAGE_1K })));
    // Both wait for the lock having written already: a transaction id means rows written.
    await eventually(async () => {
      const [w] = await sql(
        gw,
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory' AND backend_xid IS NOT NULL`,
      );
      return w!.n === 2;
    }, 30_000);
    const [seen] = await sql(gw, 'SELECT count(*)::int AS tasks FROM task WHERE project_id = $1', [projectId]);
    expect(seen).toEqual({ tasks: 0 }); // not committed, not seen
    await blocker.query('COMMIT');
    const results = await work;
    expect(results.filter((r) => r.outcome === 'held')).toHaveLength(10);
    expect(results.filter((r) => r.outcome === 'refused')).toHaveLength(54);
    // The refused requests' rows, written before the lock, were taken back.
    const [counts] = await sql(
      gw,
      `SELECT count(*)::int AS tasks, (SELECT count(*)::int FROM ledger_entry WHERE project_id = $1) AS entries FROM task WHERE project_id = $1`,
      [projectId],
    );
    expect(counts).toEqual({ tasks: 10, entries: 10 });
    expect(await reconcile(gw.db)).toEqual([]);
  } finally {
    await blocker.end();
    await gw.close();
  }
});

test('settlement raced by many concurrent polls on two instances and their pollers: one charge', async () => {
  const url = await freshDatabase();
  const a = await gateway(url, { SIMULATOR_DELAY_MS: '600000', POLL_INTERVAL_MS: '20' });
  const b = await gateway(url, { SIMULATOR_DELAY_MS: '600000', POLL_INTERVAL_MS: '20' });
  try {
    const { projectId, key } = await projectWithKey(a);
    await setBudget(a, projectId, '100');
    const res = await submitGeneration(a, key, { model: 'happyhorse-1.0', prompt: 'race', duration: 15 });
    const taskId = res.body.data.taskId;
    // Instance b's simulator does not know a's tasks: both instances' pollers and client polls go to a's upstream.
    await http(`${a.simulatorUrl}/__sim/tasks/${taskId}/complete`, { body: { status: 'ready' } });
    const polls = await Promise.all(Array.from({ length: 40 }, () => pollTask(a, key, taskId)));
    expect(polls.every((p) => p.status === 200 && p.body.data.status === 'ready')).toBe(true);
    const entries = await sql(
      a,
      `SELECT kind, amount::text FROM ledger_entry WHERE task_id = (SELECT id FROM task WHERE upstream_task_id = $1) ORDER BY id`,
      [taskId],
    );
    expect(entries).toEqual([
      { kind: 'hold', amount: '2.64' },
      { kind: 'release', amount: '2.64' },
      { kind: 'charge', amount: '2.64' },
    ]);
    const [period] = await sql(a, 'SELECT spent::text, held::text FROM budget_period');
    expect(period).toEqual({ spent: '2.64', held: '0.00' }); // 15 s × 0.176
    expect(await reconcile(a.db)).toEqual([]);
  } finally {
    await a.close();
    await b.close();
  }
});

test('a crash between the hold and the upstream answer leaves a held `unknown` task; reconcile is clean', async () => {
  const url = await freshDatabase();
  const gw = await gateway(url, {
    SIMULATOR_DELAY_MS: '600000',
    UPSTREAM_TIMEOUT_MS: '500',
    UPSTREAM_CONNECT_TIMEOUT_MS: '100',
    SUBMIT_GRACE_MS: '0',
  });
  try {
    const { projectId, key } = await projectWithKey(gw);
    await setBudget(gw, projectId, '10');
    // The upstream accepts and never answers: as if the gateway died after sending.
    await http(`${gw.simulatorUrl}/__sim/config`, { body: { hangRate: 1 } });
    const res = await submitGeneration(gw, key, { model: 'nano-banana-pro', prompt: 'lost', resolution: '2K' });
    expect(res.status).toBe(504);
    expect(res.body.message).toMatch(/outcome is unknown, its hold is kept for review/);
    const [task] = await sql(gw, `SELECT id, status, needs_review FROM task WHERE project_id = $1`, [projectId]);
    expect(task).toMatchObject({ status: 'unknown', needs_review: true });
    const [period] = await sql(gw, 'SELECT held::text FROM budget_period');
    expect(period.held).toBe('0.17');

    // A hold whose gateway died before calling the vendor stays `submitting`; the sweep finds it
    // once no call could still be under way (here 0.6 s) and keeps its hold as `unknown`.
    const abandoned = await heldTask(gw, { projectId, body: imageBody() });
    await eventually(
      async () => (await sql(gw, `SELECT status FROM task WHERE id = $1`, [abandoned.taskId]))[0].status === 'unknown',
    );
    expect(await reconcile(gw.db)).toEqual([]);
  } finally {
    await gw.close();
  }
});

test('the ledger refuses edits and deletions, and so do the figures it was computed from', async () => {
  const gw = await gateway(await freshDatabase());
  try {
    const { key } = await projectWithKey(gw);
    await submitGeneration(gw, key, IMAGE_1K);
    await expect(gw.db.query('UPDATE ledger_entry SET amount = 0')).rejects.toThrow(/append-only/);
    await expect(gw.db.query('DELETE FROM ledger_entry')).rejects.toThrow(/append-only/);
    // The task's quote and hold: what its hold entry and the budget periods were computed from.
    for (const set of [
      'hold_amount = 0',
      'estimate_amount = estimate_amount + 1',
      `estimate_lines = '{}'`,
      `accepted_at = accepted_at - interval '40 days'`,
      `unit = 'CREDITS'`,
    ]) {
      await expect(gw.db.query(`UPDATE task SET ${set}`)).rejects.toThrow(/fixed at submission/);
    }
    // Naming a fixed column without changing it, and changing the task's state, are fine.
    await gw.db.query(`UPDATE task SET hold_amount = hold_amount, needs_review = true`);
    await expect(
      gw.db.query(
        `INSERT INTO charge_line (task_id, stage, seq, component, quantity, rate, per, amount) SELECT id, 'charge', 1, 'image', 1, 0.04, 1, 0.04 FROM task`,
      ),
    ).resolves.toBeDefined();
    await expect(gw.db.query('UPDATE charge_line SET amount = 0')).rejects.toThrow(/written once/);
    await expect(gw.db.query('DELETE FROM charge_line')).rejects.toThrow(/written once/);
    const [hold] = await sql(gw, `SELECT task_id FROM ledger_entry LIMIT 1`);
    await expect(
      gw.db.query(
        `INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at) SELECT project_id, task_id, 'hold', unit, 1, now() FROM ledger_entry WHERE task_id = $1`,
        [hold.task_id],
      ),
    ).rejects.toThrow(/ledger_entry_y\d{4}m\d{2}_once/); // once per task, kind and month: each partition's index
  } finally {
    await gw.close();
  }
});

test('period rollover: a hold placed yesterday and settled today counts in yesterday (the period of acceptance)', async () => {
  const gw = await gateway(await freshDatabase(), { POLLER_ENABLED: 'false' });
  try {
    const { projectId } = await projectWithKey(gw);
    const daily = await setBudget(gw, projectId, '1.00', true, 'DAILY');
    const startOfToday = new Date(new Date().toISOString().slice(0, 10) + 'T00:00:00Z');
    const lastInstantOfYesterday = new Date(startOfToday.getTime() - 1);
    // A 15-second sora-2-pro task (0.72 USD), accepted by the vendor a millisecond before midnight.
    await acceptedTask(gw, {
      projectId,
      upstreamTaskId: '42',
      body: videoBody({ duration: 15 }),
      acceptedAt: lastInstantOfYesterday,
    });

    const settlement = gw.app.get(SettlementService);
    const task = await gw.app.get(TaskStore).findByUpstreamId('42', projectId);
    expect(await settlement.apply(task!, { status: 'ready', usage: undefined })).toBe(true);

    const periods = await sql(
      gw,
      `SELECT period_start, spent::text, held::text FROM budget_period WHERE budget_id = $1 ORDER BY period_start`,
      [daily],
    );
    expect(periods).toEqual([
      { period_start: new Date(startOfToday.getTime() - 86_400_000), spent: '0.72', held: '0.00' },
      { period_start: startOfToday, spent: '0', held: '0' },
    ]);
    const status = await gw.app.get(BudgetStatusService).status(projectId);
    expect(status[0]).toMatchObject({ periodStart: startOfToday, spent: dec(0), held: dec(0) });
    expect(await reconcile(gw.db)).toEqual([]);
  } finally {
    await gw.close();
  }
});

test('a budget set after a task was accepted in an earlier period: settling counts the task once (regression)', async () => {
  // The period row does not exist until settlement makes it from the ledger, which by then holds
  // the settlement's own entries: moving that fresh row again counted the charge twice.
  const gw = await gateway(await freshDatabase(), { POLLER_ENABLED: 'false' });
  try {
    const { projectId } = await projectWithKey(gw);
    const startOfToday = new Date(new Date().toISOString().slice(0, 10) + 'T00:00:00Z');
    const yesterday = new Date(startOfToday.getTime() - 3_600_000);
    await acceptedTask(gw, {
      projectId,
      upstreamTaskId: '43',
      body: videoBody({ duration: 15 }),
      acceptedAt: yesterday,
    }); // 0.72 USD
    const daily = await setBudget(gw, projectId, '1.00', true, 'DAILY');
    const before = await sql(
      gw,
      `SELECT count(*)::int AS n FROM budget_period WHERE budget_id = $1 AND period_start < $2`,
      [daily, startOfToday],
    );
    expect(before[0]!.n).toBe(0);

    expect(await settleReady(gw, projectId, '43')).toBe(true);

    const [row] = await sql(
      gw,
      `SELECT spent::text, held::text FROM budget_period WHERE budget_id = $1 AND period_start < $2`,
      [daily, startOfToday],
    );
    expect(row).toEqual({ spent: '0.72', held: '0.00' });
    expect(await reconcile(gw.db)).toEqual([]);
  } finally {
    await gw.close();
  }
});
