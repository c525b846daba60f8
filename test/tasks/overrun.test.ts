/**
 * Decisions §6 and §10 through the running service: a charge above its hold is an overrun,
 * charged in full but never silent (task, warning, metric, 402 "overrun by"); projects may hold
 * more for chat; an operator resolves what needs review with ledger entries, once, and
 * reconcile stays clean.
 */
import type { Gateway } from '../../src/bootstrap.js';
import { reconcile } from '../../src/ledger/reconcile.js';
import { dec } from '../../src/pricing/money.js';
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

const TASK = `query($id: ID!) { task(taskId: $id) { status needsReview reviewReason overrun held
  estimate { amount } charge { amount warnings } resolution { outcome reason } ledgerEntries { kind amount reason } } }`;
const BUDGETS = `query($p: ID!) { budgetStatus(projectId: $p) { budgetId limit spent held remaining } }`;

let gw: Gateway;
beforeAll(async () => {
  gw = await gateway(await freshDatabase(), {
    SIMULATOR_DELAY_MS: '600000',
    UPSTREAM_TIMEOUT_MS: '400',
    UPSTREAM_CONNECT_TIMEOUT_MS: '200',
  });
});
afterAll(() => gw.close());

const complete = (taskId: number, usage: unknown) =>
  http(`${gw.simulatorUrl}/__sim/tasks/${taskId}/complete`, { body: { status: 'ready', usage } });
const taskOf = async (id: string | number) => (await graphql(gw, ADMIN, TASK, { id: String(id) })).body.data.task;
const budgetsOf = async (projectId: string) =>
  (await graphql(gw, ADMIN, BUDGETS, { p: projectId })).body.data.budgetStatus;
const setBudget = (projectId: string, unit: string, limit: string) =>
  graphql(
    gw,
    ADMIN,
    `mutation($p: ID!, $l: Decimal!) { setBudget(projectId: $p, unit: ${unit}, limit: $l, period: MONTHLY, hard: true) }`,
    { p: projectId, l: limit },
  );

test('the issue\'s case: gemini-3.8-flash, max_tokens 16, 24,000 thought tokens → charged, flagged, counted; the budget then refuses "overrun by"', async () => {
  const { key, projectId } = await projectWithKey(gw);
  await setBudget(projectId, 'CREDITS', '100');
  const submitted = await submitChat(gw, key, {
    model: 'gemini-3.8-flash',
    messages: [{ role: 'user', content: 'think hard' }],
    max_tokens: 16,
  });
  expect(submitted.status).toBe(200);
  const taskId = submitted.body.data.taskId;
  await complete(taskId, { promptTokenCount: 20, candidatesTokenCount: 16, thoughtsTokenCount: 24_000 });
  expect((await pollTask(gw, key, taskId)).status).toBe(200);

  const task = await taskOf(taskId);
  const charge = dec(task.charge.amount);
  const hold = dec(task.estimate.amount); // chat hold = estimate with the default multiplier 1
  expect(charge.greaterThan(100)).toBe(true);
  expect(task.overrun).toBe(charge.minus(hold).toFixed());
  expect(task.needsReview).toBe(true);
  const warning = `overrun: charged ${task.charge.amount} CREDITS against a hold of ${hold.toFixed()} (estimate ${hold.toFixed()}), ${task.overrun} above the hold; the budgets of this unit count the whole charge`;
  expect(task.charge.warnings).toContain(warning);
  expect(task.reviewReason).toBe(warning);

  const [budget] = await budgetsOf(projectId);
  expect(budget).toMatchObject({
    limit: '100',
    spent: task.charge.amount,
    held: '0',
    remaining: dec(100).minus(charge).toFixed(),
  });
  const over = charge.minus(100).toFixed();
  const refused = await submitChat(gw, key, {
    model: 'glm-5.3',
    messages: [{ role: 'user', content: 'x' }],
    max_tokens: 1,
  });
  expect(refused.status).toBe(402);
  expect(refused.body.message).toBe(
    `budget ${budget.budgetId} (monthly, hard limit 100 CREDITS) is overrun by ${over} CREDITS: it refuses every submission in CREDITS until its next period or a higher limit`,
  );
  expect(refused.body.details).toMatchObject({ overrunBy: over, remaining: `-${over}` });
  // USD has no budget here: media is not refused by a credits overrun.
  expect((await submitGeneration(gw, key, { model: 'seedream-4.0', prompt: 'p' })).status).toBe(200);

  const metrics = await http(`${gw.url}/metrics`);
  expect(metrics.text).toMatch(/spendgate_overruns_total\{unit="CREDITS"\} 1\n/);
  expect(metrics.text).toMatch(/spendgate_overrun_amount_total\{unit="CREDITS"\} \d/);
  expect(await reconcile(gw.db)).toEqual([]);
});

test('chatHoldMultiplier: a project holds its chat estimates × the multiplier; 0.5 is refused', async () => {
  const { key, projectId } = await projectWithKey(gw);
  const set = (m: string) =>
    graphql(
      gw,
      ADMIN,
      `
        mutation ($p: ID!, $m: Decimal!) {
          setProjectPolicies(projectId: $p, chatHoldMultiplier: $m)
        }
      `,
      { p: projectId, m },
    );
  expect((await set('0.5')).body.errors?.[0]?.message).toBe(
    'chatHoldMultiplier: must be between 1 and 1000 (1 holds exactly the estimate)',
  );
  expect((await set('2.5')).body.data.setProjectPolicies).toBe(true);
  const res = await submitChat(gw, key, {
    model: 'glm-5.3',
    messages: [{ role: 'user', content: 'hello' }],
    max_tokens: 1000,
  });
  const task = await taskOf(res.body.data.taskId);
  expect(task.held).toBe(dec(task.estimate.amount).times('2.5').toFixed());
  expect(task.ledgerEntries).toEqual([{ kind: 'hold', amount: task.held, reason: null }]);
  // Media holds are exact: never scaled.
  const media = await submitGeneration(gw, key, { model: 'seedream-4.0', prompt: 'p' });
  expect((await taskOf(media.body.data.taskId)).held).toBe('0.04');
  const projects = await graphql(gw, ADMIN, '{ projects { id chatHoldMultiplier } }');
  expect(projects.body.data.projects).toContainEqual({ id: projectId, chatHoldMultiplier: '2.5' });
});

describe('resolveTask (decisions §10)', () => {
  const resolve = (taskId: string, outcome: string, reason: string, amount?: string, token = ADMIN) =>
    graphql(
      gw,
      token,
      `mutation($t: ID!, $r: String!, $a: Decimal) { resolveTask(taskId: $t, outcome: ${outcome}, reason: $r, amount: $a) { status needsReview held resolution { outcome reason } ledgerEntries { kind amount } } }`,
      {
        t: taskId,
        r: reason,
        a: amount ?? null,
      },
    );
  const knobs = (body: Record<string, number>) => http(`${gw.simulatorUrl}/__sim/config`, { body });
  const unknownTask = async (key: string): Promise<string> => {
    await knobs({ resetRate: 1 });
    const res = await submitGeneration(gw, key, { model: 'seedream-4.0', prompt: 'p', n: 2 }); // 0.08 USD held
    await knobs({ resetRate: 0 });
    expect(res.status).toBe(504);
    return res.body.details.gatewayTaskId as string;
  };

  test('an unknown task: RELEASE frees its hold, CHARGE (the hold by default) charges it; budgets and reconcile agree', async () => {
    const { key, projectId } = await projectWithKey(gw);
    await setBudget(projectId, 'USD', '10');
    const a = await unknownTask(key);
    const b = await unknownTask(key);
    expect((await budgetsOf(projectId))[0]).toMatchObject({ spent: '0', held: '0.16' });

    const released = await resolve(a, 'RELEASE', 'vendor confirmed it never ran');
    expect(released.body.errors).toBeUndefined();
    expect(released.body.data.resolveTask).toMatchObject({
      status: 'unknown',
      needsReview: false,
      held: '0',
      resolution: { outcome: 'RELEASE', reason: 'vendor confirmed it never ran' },
    });
    expect(released.body.data.resolveTask.ledgerEntries).toEqual([
      { kind: 'hold', amount: '0.08' },
      { kind: 'release', amount: '0.08' },
    ]);

    const charged = await resolve(b, 'CHARGE', 'vendor invoice line 42');
    expect(charged.body.data.resolveTask.ledgerEntries).toEqual([
      { kind: 'hold', amount: '0.08' },
      { kind: 'release', amount: '0.08' },
      { kind: 'charge', amount: '0.08' },
    ]);
    expect((await budgetsOf(projectId))[0]).toMatchObject({ spent: '0.08', held: '0' });
    expect(await reconcile(gw.db)).toEqual([]);
  });

  test("an overrun task: CHARGE without an amount accepts the vendor's charge; an explicit lower amount is a credit (an adjustment); nothing is edited", async () => {
    const { key } = await projectWithKey(gw);
    const overrun = async () => {
      const res = await submitChat(gw, key, {
        model: 'gemini-3.8-flash',
        messages: [{ role: 'user', content: 'x' }],
        max_tokens: 16,
      });
      await complete(res.body.data.taskId, {
        promptTokenCount: 10,
        candidatesTokenCount: 16,
        thoughtsTokenCount: 1_000,
      });
      await pollTask(gw, key, res.body.data.taskId);
      return { id: String(res.body.data.taskId), before: await taskOf(res.body.data.taskId) };
    };
    const accepted = await overrun();
    const kept = await resolve(accepted.id, 'CHARGE', 'the vendor bills the usage');
    expect(kept.body.errors).toBeUndefined();
    expect(kept.body.data.resolveTask.ledgerEntries.at(-1)).toEqual({
      kind: 'charge',
      amount: accepted.before.charge.amount,
    });
    expect(kept.body.data.resolveTask.ledgerEntries.some((e: { kind: string }) => e.kind === 'adjustment')).toBe(false);

    const forgiven = await overrun();
    const credited = await resolve(
      forgiven.id,
      'CHARGE',
      'customer goodwill: charge what was held',
      forgiven.before.estimate.amount,
    );
    expect(credited.body.errors).toBeUndefined();
    const entries = credited.body.data.resolveTask.ledgerEntries;
    expect(entries.at(-1)).toEqual({ kind: 'adjustment', amount: `-${forgiven.before.overrun}` });
    const net = entries
      .filter((e: { kind: string }) => e.kind === 'charge' || e.kind === 'adjustment')
      .reduce((s: ReturnType<typeof dec>, e: { amount: string }) => s.plus(e.amount), dec(0));
    expect(net.toFixed()).toBe(forgiven.before.estimate.amount);
    expect(await reconcile(gw.db)).toEqual([]);
  });

  test('refusals: not under review, twice, a project key, no reason, RELEASE with an amount, a negative CHARGE', async () => {
    const { key } = await projectWithKey(gw);
    const t = await unknownTask(key);
    expect((await resolve(t, 'CHARGE', ' ')).body.errors?.[0]?.message).toBe('reason: must be 1 to 1000 characters');
    expect((await resolve(t, 'RELEASE', 'x', '1')).body.errors?.[0]?.message).toMatch(
      /^amount: RELEASE charges nothing/,
    );
    expect((await resolve(t, 'CHARGE', 'x', '-1')).body.errors?.[0]?.message).toMatch(/^amount: must not be negative/);
    expect((await resolve(t, 'CHARGE', 'x', undefined, key)).body.errors?.[0]?.extensions).toMatchObject({
      code: 'FORBIDDEN',
    });
    // Two operators at once: exactly one resolution lands.
    const both = await Promise.all([resolve(t, 'CHARGE', 'first'), resolve(t, 'RELEASE', 'second')]);
    expect(both.filter((r) => !r.body.errors)).toHaveLength(1);
    expect(both.find((r) => r.body.errors)!.body.errors?.[0]?.extensions).toMatchObject({ code: 'CONFLICT' });
    const settledOk = await submitGeneration(gw, key, { model: 'seedream-4.0', prompt: 'p' });
    expect((await resolve(String(settledOk.body.data.taskId), 'CHARGE', 'x')).body.errors?.[0]).toMatchObject({
      message: expect.stringMatching(/is not under review/),
      extensions: { code: 'CONFLICT' },
    });
    const rows = await sql(
      gw,
      `SELECT count(*)::int AS n FROM ledger_entry WHERE reason LIKE 'resolved%' AND task_id = $1`,
      [t.slice(3)],
    );
    expect(rows[0].n).toBeGreaterThan(0);
    expect(await reconcile(gw.db)).toEqual([]);
  });
});

test("a resolution's stated amount is what a settled task costs all told: corrected before it was resolved, its net ends at the amount (decisions §10, §16)", async () => {
  const { key, projectId } = await projectWithKey(gw);
  const submitted = await submitChat(gw, key, {
    model: 'glm-5.3',
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 4,
  });
  const taskId = String(submitted.body.data.taskId);
  await complete(Number(taskId), { prompt_tokens: 10, completion_tokens: 4000 });
  expect((await pollTask(gw, key, Number(taskId))).status).toBe(200);
  expect((await taskOf(taskId)).needsReview).toBe(true);
  // A correction of the task first (a credit of 1), then the operator charges 5 for it.
  const corrected = await graphql(
    gw,
    ADMIN,
    `
      mutation ($p: ID!, $t: ID!) {
        adjustLedger(projectId: $p, unit: CREDITS, amount: "-1", reason: "goodwill", taskId: $t)
      }
    `,
    { p: projectId, t: taskId },
  );
  expect(corrected.body.errors).toBeUndefined();
  const resolved = await graphql(
    gw,
    ADMIN,
    `
      mutation ($t: ID!) {
        resolveTask(taskId: $t, outcome: CHARGE, amount: "5", reason: "agreed with the team") {
          net
        }
      }
    `,
    { t: taskId },
  );
  expect(resolved.body.errors).toBeUndefined();
  // Before: the adjustment was counted from the charge alone, and the net ended at 5 − 1 = 4.
  expect(resolved.body.data.resolveTask.net).toBe('5');
  const other = await submitChat(gw, key, {
    model: 'glm-5.3',
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 4,
  });
  await complete(other.body.data.taskId, { prompt_tokens: 10, completion_tokens: 4000 });
  await pollTask(gw, key, other.body.data.taskId);
  await graphql(
    gw,
    ADMIN,
    `
      mutation ($p: ID!, $t: ID!) {
        adjustLedger(projectId: $p, unit: CREDITS, amount: "-1", reason: "goodwill", taskId: $t)
      }
    `,
    { p: projectId, t: String(other.body.data.taskId) },
  );
  // CHARGE with no amount keeps what the task stands at: nothing moves.
  const kept = await graphql(
    gw,
    ADMIN,
    `
      mutation ($t: ID!) {
        resolveTask(taskId: $t, outcome: CHARGE, reason: "the vendor's usage") {
          net
        }
      }
    `,
    { t: String(other.body.data.taskId) },
  );
  const before = await taskOf(other.body.data.taskId);
  expect(kept.body.data.resolveTask.net).toBe(dec(before.charge.amount).minus(1).toFixed());
  expect(await reconcile(gw.db)).toEqual([]);
});
