/**
 * Ghost holds (decisions §10): tasks the vendor never finishes or forgot. Past TASK_REVIEW_AFTER_MS a
 * task still in flight is flagged for review once (one task.needs_review event), hold kept; a task
 * the vendor answers "not found" becomes unknown; the client's poll answers our record, never a
 * 5xx; both can be resolved; budgets say how much of their holds is under review. Polling backs
 * off with age under POLL_MAX_PER_SECOND shared by two instances, and fresh tasks still settle.
 * Real PostgreSQL, real HTTP, the simulator (stall / forget) and a counting vendor.
 */
import Fastify from 'fastify';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import pg from 'pg';
import type { Gateway } from '../../src/bootstrap.js';
import { reconcile } from '../../src/ledger/reconcile.js';
import { createSimulator } from '../../src/simulator/simulator.js';
import { nextPollDelay } from '../../src/tasks/poller.service.js';
import { acceptedTask, imageBody } from '../support/builders.js';
import {
  ADMIN,
  eventually,
  freshDatabase,
  gateway,
  graphql,
  http,
  pollTask,
  projectWithKey,
  spawnGateway,
  sql,
  submitGeneration,
  type ChildGateway,
} from '../support/harness.js';

const VENDOR_KEY = 'vk-ghost-0123456789';

describe('a task the vendor keeps processing, and one it forgot (two instances)', () => {
  const sim = createSimulator({ apiKey: VENDOR_KEY, delayMs: 600_000 });
  let simUrl: string;
  let a: Gateway;
  let b: Gateway;
  beforeAll(async () => {
    simUrl = await sim.app.listen({ port: 0, host: '127.0.0.1' });
    const url = await freshDatabase();
    const env = {
      UPSTREAM_BASE_URL: simUrl,
      UPSTREAM_API_KEY: VENDOR_KEY,
      TASK_REVIEW_AFTER_MS: '2000',
      TASK_NOT_FOUND_AFTER_MS: '1000',
      POLL_INTERVAL_MS: '200',
    };
    a = await gateway(url, env);
    b = await gateway(url, env);
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
    await sim.app.close();
  });

  test('flagged with a reason and one event within 10 s, still held; the forgotten one unknown; resolving both works; reconcile clean', async () => {
    const { projectId, key } = await projectWithKey(a);
    const budget = await graphql(
      a,
      ADMIN,
      `
        mutation ($p: ID!) {
          setBudget(projectId: $p, unit: USD, limit: "10", period: MONTHLY, hard: true)
        }
      `,
      { p: projectId },
    );
    expect(budget.body.errors).toBeUndefined();
    const stuck = await submitGeneration(a, key, imageBody({ resolution: '2K' }));
    const lost = await submitGeneration(b, key, imageBody({ resolution: '4K' }));
    const [stuckId, lostId] = [stuck.body.data.taskId, lost.body.data.taskId];
    await http(`${simUrl}/__sim/tasks/${stuckId}/stall`, { method: 'POST' });
    await http(`${simUrl}/__sim/tasks/${lostId}/forget`, { method: 'POST' });

    // The client's poll of the forgotten task: our record, 200, never a 5xx.
    const polled = await pollTask(b, key, lostId);
    expect(polled.status).toBe(200);
    expect(polled.body).toMatchObject({
      code: 1000,
      data: { taskId: lostId, model: 'seedream-4.0', type: 'image' },
      gateway: { reason: expect.stringMatching(/not found/) },
    });

    const row = (id: number) =>
      sql(
        a,
        `SELECT status::text, needs_review, review_reason, hold_amount::text, settled_at FROM task WHERE upstream_task_id = $1`,
        [id],
      ).then((r) => r[0]!);
    const flagged = await eventually(
      async () => ((await row(stuckId)).needs_review ? row(stuckId) : undefined),
      10_000,
      100,
    );
    expect(flagged).toMatchObject({ status: 'processing', settled_at: null });
    expect(flagged.review_reason).toMatch(
      /^still processing at the vendor .* after it was accepted \(\d+ polls\); its hold is kept until it settles or an operator resolves it$/,
    );
    const gone = await eventually(
      async () => ((await row(lostId)).status === 'unknown' ? row(lostId) : undefined),
      10_000,
      100,
    );
    expect(gone.needs_review).toBe(true);
    expect(gone.review_reason).toMatch(
      /^the vendor answered "not found" to \d+ polls over .*: the task is unknown, its hold is kept for review$/,
    );
    expect((await pollTask(a, key, lostId)).body).toMatchObject({
      data: { status: 'unknown' },
      gateway: { status: 'unknown', needsReview: true },
    });

    // Still held, and the budget says so; exactly one review event each, whatever both pollers saw.
    await new Promise((r) => setTimeout(r, 1500));
    const events = await sql(a, `SELECT cause FROM outbox_event WHERE type = 'task.needs_review' ORDER BY cause`);
    expect(events).toHaveLength(2);
    const status = await graphql(
      a,
      ADMIN,
      `
        query ($p: ID!) {
          budgetStatus(projectId: $p) {
            held
            heldUnderReview
          }
        }
      `,
      { p: projectId },
    );
    expect(status.body.data.budgetStatus).toEqual([{ held: '0.13', heldUnderReview: '0.13' }]); // 0.06 + 0.07

    const resolve = (id: number, outcome: string) =>
      graphql(
        b,
        ADMIN,
        `mutation($t: ID!) { resolveTask(taskId: $t, outcome: ${outcome}, reason: "vendor support ticket 7") { status needsReview held net } }`,
        { t: String(id) },
      );
    const released = await resolve(lostId, 'RELEASE');
    expect(released.body.errors).toBeUndefined();
    expect(released.body.data.resolveTask).toEqual({ status: 'unknown', needsReview: false, held: '0', net: '0' });
    const charged = await resolve(stuckId, 'CHARGE');
    expect(charged.body.data.resolveTask).toEqual({ status: 'unknown', needsReview: false, held: '0', net: '0.06' });
    const after = await graphql(
      a,
      ADMIN,
      `
        query ($p: ID!) {
          budgetStatus(projectId: $p) {
            spent
            held
            heldUnderReview
          }
        }
      `,
      { p: projectId },
    );
    expect(after.body.data.budgetStatus).toEqual([{ spent: '0.06', held: '0', heldUnderReview: '0' }]);
    // Resolved: no longer polled, never flagged again.
    const polls = await sql(a, `SELECT next_poll_at FROM task WHERE upstream_task_id = ANY($1::bigint[])`, [
      [stuckId, lostId],
    ]);
    expect(polls).toEqual([{ next_poll_at: null }, { next_poll_at: null }]);
    expect(await reconcile(a.db)).toEqual([]);
  });
});

test('the next poll of an unfinished task: a tenth of its age, from the interval up to an hour', () => {
  const mid = () => 0.5;
  expect(nextPollDelay(5_000, 2_000, mid)).toBe(2_000);
  expect(nextPollDelay(600_000, 2_000, mid)).toBe(60_000);
  expect(nextPollDelay(86_400_000, 2_000, mid)).toBe(3_600_000);
  expect(nextPollDelay(600_000, 2_000, () => 0)).toBe(54_000);
});

describe('20,000 tasks stuck at the vendor and 100 fresh ones, two instances, POLL_MAX_PER_SECOND=40', () => {
  const CAP = 40;
  const READY_AFTER_MS = 1_000;
  const pollsAt: number[] = [];
  const readyAt = new Map<number, number>();
  const vendor = Fastify();
  let next = 500_000_000;
  vendor.post('/api-platform/v1/generations', async (req) => {
    const taskId = ++next;
    readyAt.set(taskId, Date.now() + READY_AFTER_MS);
    return {
      code: 1000,
      data: {
        id: `im_${taskId}`,
        taskId,
        type: 'image',
        model: (req.body as { model: string }).model,
        status: 'processing',
      },
    };
  });
  vendor.get<{ Params: { id: string } }>('/api-platform/v1/tasks/:id', async (req) => {
    pollsAt.push(Date.now());
    const id = Number(req.params.id);
    const ready = readyAt.get(id);
    const status = ready !== undefined && Date.now() >= ready ? 'ready' : 'processing'; // the stuck ones: never
    return { code: 1000, data: { id: `im_${id}`, taskId: id, type: 'image', model: 'seedream-4.0', status } };
  });
  // The gateways in their own processes, as in production: the vendor here times what arrives.
  let db: Gateway;
  let a: ChildGateway;
  let b: ChildGateway;
  beforeAll(async () => {
    const vendorUrl = await vendor.listen({ port: 0, host: '127.0.0.1' });
    const url = await freshDatabase();
    db = await gateway(url, { UPSTREAM_BASE_URL: vendorUrl, UPSTREAM_API_KEY: VENDOR_KEY, POLLER_ENABLED: 'false' });
    const { projectId } = await projectWithKey(db);
    // Stuck for an hour already: accepted then, the vendor answers "processing" to every poll.
    const since = new Date(Date.now() - 3_600_000);
    for (let i = 0; i < 20_000; i += 1_000) {
      await Promise.all(
        Array.from({ length: 1_000 }, (_, j) =>
          acceptedTask(db, { projectId, upstreamTaskId: String(100_000_000 + i + j), acceptedAt: since }),
        ),
      );
    }
    const env = {
      DATABASE_URL: url,
      ADMIN_TOKEN: ADMIN,
      UPSTREAM_BASE_URL: vendorUrl,
      UPSTREAM_API_KEY: VENDOR_KEY,
      POLL_INTERVAL_MS: '250',
      POLL_MAX_PER_SECOND: String(CAP),
      TASK_REVIEW_AFTER_MS: '36000000',
      LOG_LEVEL: 'silent',
    };
    [a, b] = await Promise.all([spawnGateway(env), spawnGateway(env)]);
  }, 120_000);
  afterAll(async () => {
    for (const child of [a, b]) child?.proc.kill('SIGTERM');
    await Promise.all([a?.exited, b?.exited]);
    await db.close();
    await vendor.close();
  });

  test('the vendor sees at most the cap each second, and every fresh task settles within 10 s of the vendor finishing', async () => {
    const { key } = await projectWithKey(db);
    // How late this process's event loop got to anything while the vendor counted: a poll that
    // arrived during a stall is stamped when the loop gets to it, up to that much after it came.
    const lag = monitorEventLoopDelay({ resolution: 10 });
    lag.enable();
    const start = Date.now();
    const fresh = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        http(`${(i % 2 ? a : b).url}/api-platform/v1/generations`, { key, body: imageBody() }),
      ),
    );
    const ids = fresh.map((r) => r.body.data.taskId as number);
    expect(fresh.every((r) => r.status === 200)).toBe(true);
    const settled = await eventually(
      async () => {
        const rows = await sql(
          db,
          `SELECT upstream_task_id::text AS id, settled_at FROM task WHERE upstream_task_id = ANY($1::bigint[]) AND settled_at IS NOT NULL`,
          [ids],
        );
        return rows.length === 100 ? rows : undefined;
      },
      30_000,
      200,
    );
    for (const row of settled)
      expect((row.settled_at as Date).getTime() - readyAt.get(Number(row.id))!).toBeLessThan(10_000);
    await new Promise((r) => setTimeout(r, 2_000)); // and the stuck ones keep being polled, paced
    lag.disable();
    const lagS = lag.max / 1e9;
    const bySecond = new Map<number, number>();
    for (const t of pollsAt.filter((t) => t >= start))
      bySecond.set(Math.floor(t / 1000), (bySecond.get(Math.floor(t / 1000)) ?? 0) + 1);
    const slowest = Math.max(...settled.map((r) => (r.settled_at as Date).getTime() - readyAt.get(Number(r.id))!));
    const IN_FLIGHT = 2;
    const inWindow = pollsAt.filter((t) => t >= start);
    const spanS = (inWindow.at(-1)! - inWindow[0]!) / 1000;
    const bound = Math.floor((spanS + lagS) * CAP) + 1 + 2 * IN_FLIGHT;
    process.stdout.write(
      `poll pace: at most ${Math.max(...bySecond.values())} polls in a second (cap ${CAP}); ${inWindow.length} in ${spanS} s ` +
        `(bound ${bound}, this process's loop at most ${Math.round(lagS * 1000)} ms late); ` +
        `fresh tasks settled at most ${slowest} ms after the vendor finished\n`,
    );
    // The cap is kept on send slots: spendgate_claim_polls spaces them 1.02 / cap s apart over both
    // instances (its own test below pins that), and a poll whose slot passed is not sent late. What
    // the vendor here counts adds each gateway's timer jitter, the way back from each claim and this
    // process's own event loop, which stamps a poll only when it gets to it (a fresh-clone CI run read
    // 43 in one calendar second against a cap of 40). So the per-second maximum is printed above, and
    // the assertion is the promise over the whole window: no more than the cap a second on average,
    // give or take the two polls that can be in flight at each end. The 2 % between the slots' pace
    // and the cap is the product's margin for that jitter; the test does not spend it (a fresh-clone
    // CI run of a loaded machine counted 252 polls in a window whose slots allowed 251 and the cap 256).
    // The window is the stamps' span widened by this process's longest stall: the first stamp may be
    // that late, so polls counted in it were sent no earlier than that much before it (the fresh-clone
    // CI of 3613956 counted 269 in 6.499 s against a bound of 264 without it, 50 in one calendar second,
    // while this process was sending the 100 submissions and answering their creation itself).
    expect(inWindow.length).toBeLessThanOrEqual(bound);
    expect(inWindow.length).toBeGreaterThan((spanS * CAP) / 2); // the cap is used, not starved
    expect(await reconcile(db.db)).toEqual([]);
  }, 60_000);
});

describe("the shared pace, when a claim waits for another instance's", () => {
  // Regression (a fresh-clone CI run, 2026-11-27: 43 polls in one second against a cap of 40): the
  // claim measured its slots from when it began, so one that waited for the pace's lock answered
  // its first slot as "now" and the gateway sent it that much late, unseen by LATE_MS, bunched with
  // the other instance's polls.
  test('slots are measured from the answer: the first is when the lock was granted, not when the claim began', async () => {
    const gw = await gateway(await freshDatabase(), { POLLER_ENABLED: 'false' });
    const other = new pg.Client(gw.databaseUrl);
    const claimer = new pg.Client(gw.databaseUrl);
    try {
      const { projectId } = await projectWithKey(gw);
      for (let i = 0; i < 3; i++) await acceptedTask(gw, { projectId, upstreamTaskId: String(300_000_000 + i) });
      await sql(
        gw,
        `UPDATE task SET next_poll_at = clock_timestamp() - interval '1 second' WHERE status = 'processing'`,
      );
      await Promise.all([other.connect(), claimer.connect()]);
      // Another instance's claim holds the pace for 300 ms.
      await other.query('BEGIN');
      await other.query('SELECT next_at FROM poll_pace WHERE id = 1 FOR UPDATE');
      const began = Date.now();
      const claim = claimer.query<{ slot_ms: number }>('SELECT slot_ms FROM spendgate_claim_polls($1, 50, 10, 30)', [
        'pace-test',
      ]);
      await new Promise((r) => setTimeout(r, 300));
      await other.query('COMMIT');
      const { rows } = await claim;
      const answeredAt = Date.now();
      expect(rows).toHaveLength(3);
      // Where the pace put the first slot: its next free slot, less the three this claim took (1.02 s / 10 apart).
      const {
        rows: [pace],
      } = await claimer.query<{ next_at: Date }>('SELECT next_at FROM poll_pace WHERE id = 1');
      const firstSlot = pace!.next_at.getTime() - 3 * 102;
      expect(firstSlot).toBeGreaterThanOrEqual(began + 290); // not before the lock was granted
      // Where the gateway puts it (the answer's arrival + slot_ms): the same moment, give or take the
      // commit and the way back (a few ms; before the fix, the 300 ms of waiting).
      expect(Math.abs(answeredAt + rows[0]!.slot_ms - firstSlot)).toBeLessThan(150);
    } finally {
      await Promise.all([other.end(), claimer.end()]);
      await gw.close();
    }
  });
});
