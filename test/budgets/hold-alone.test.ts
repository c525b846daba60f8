/**
 * A request held alone (spendgate_hold_one, the path of ordinary load bench/FINDINGS.md) against the
 * batch function it stands in for, on real PostgreSQL:
 * - for any budgets (every scope, unit, period, hard or soft, thresholds) and any sequence of
 *   requests (keys, users, tags, amounts, Idempotency-Keys, versions, acceptance times), the one-
 *   request function followed by the batch function when it declines leaves exactly the
 *   outcomes, tasks, ledger entries, balances and threshold alerts that the batch function alone
 *   leaves (fast-check);
 * - 300 concurrent requests alone over two pools (two instances) against a hard project budget
 *   and an each-user budget: exactly what fits is held, no balance ever passes its limit, each
 *   threshold is recorded once, and reconcile is clean.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { Database } from '../../src/database/database.js';
import { holdAlone, holdInBatch, type HoldOutcome, type HoldRequest } from '../../src/ledger/holds.js';
import { reconcile } from '../../src/ledger/reconcile.js';
import type { Quote } from '../../src/pricing/engine.js';
import { dec, Money } from '../../src/pricing/money.js';
import type { Unit } from '../../src/pricing/pricing.types.js';
import { freshDatabase } from '../support/harness.js';

/** What LedgerService does with a request alone: the one-request function, else the batch function. */
async function alone(db: Database, r: HoldRequest): Promise<{ outcome: HoldOutcome; path: 'alone' | 'batch' }> {
  const held = await holdAlone(db, r);
  return held ? { outcome: held, path: 'alone' } : { outcome: (await holdInBatch(db, [r]))[0]!, path: 'batch' };
}

function quoteOf(unit: Unit, amount: string): Quote {
  const a = dec(amount);
  return {
    unit,
    exactness: unit === 'CREDITS' ? 'ESTIMATE' : 'EXACT',
    amount: a,
    ...(unit === 'CREDITS' ? { tier: 'base' } : {}),
    lines: a.isZero()
      ? []
      : [
          { component: 'input', quantity: dec(12), rate: dec(0), per: dec(1000000), amount: dec(0) },
          { component: 'output,"tokens"', quantity: dec(4), rate: a, per: dec(4), amount: a },
        ],
    warnings: unit === 'CREDITS' ? ['an estimate: the most output the request allows'] : [],
    needsReview: false,
    basis: { kind: 'image', resolution: '1K', duration: null, n: 1 },
  };
}

interface BudgetSpec {
  scope: 'PROJECT' | 'API_KEY' | 'TAG' | 'USER' | 'EACH_USER';
  unit: Unit;
  limit: string;
  hard: boolean;
  period: 'DAILY' | 'WEEKLY' | 'MONTHLY' | 'LIFETIME';
  thresholds: number[];
}

interface RequestSpec {
  key: 0 | 1 | null;
  user: string | null;
  tags: string[];
  unit: Unit;
  amount: string;
  idempotencyKey: string | null;
  version: number;
  acceptedNow: boolean;
  /** A chat estimate's hold is a multiple of it (a project's chatHoldMultiplier). */
  holdMultiplier: string;
}

const budgetSpec: fc.Arbitrary<BudgetSpec> = fc.record({
  scope: fc.constantFrom('PROJECT', 'API_KEY', 'TAG', 'USER', 'EACH_USER'),
  unit: fc.constantFrom<Unit>('USD', 'CREDITS'),
  limit: fc.constantFrom('0', '0.05', '0.1', '0.25', '1.000', '100'),
  hard: fc.boolean(),
  period: fc.constantFrom('DAILY', 'WEEKLY', 'MONTHLY', 'LIFETIME'),
  thresholds: fc.subarray([25, 50, 80, 100]),
});

const requestSpec: fc.Arbitrary<RequestSpec> = fc.record({
  key: fc.constantFrom<0 | 1 | null>(0, 1, null),
  user: fc.constantFrom(null, 'ada', 'grace'),
  tags: fc.constantFrom([], ['team=search'], ['team=ads']),
  unit: fc.constantFrom<Unit>('USD', 'CREDITS'),
  amount: fc.constantFrom('0', '0.01', '0.04', '0.040', '0.3', '0.0000001'),
  idempotencyKey: fc.constantFrom(null, null, 'first', 'second'),
  version: fc.constantFrom(1, 1, 1, 2),
  acceptedNow: fc.boolean(),
  holdMultiplier: fc.constantFrom('1', '1', '1.5'),
});

let budgetsMade = 0;

/** A project with two keys (the first tagged team=search) and the budgets, all alike in both worlds. */
async function world(db: Database, budgets: BudgetSpec[]) {
  const {
    rows: [p],
  } = await db.query<{ id: string }>(
    `INSERT INTO project (id, name) VALUES (gen_random_uuid(), 'hold-alone-' || gen_random_uuid()) RETURNING id`,
  );
  const keys: string[] = [];
  for (const tags of [['team=search'], []]) {
    const {
      rows: [k],
    } = await db.query<{ id: string }>(
      `INSERT INTO api_key (id, project_id, prefix, hash, tags) VALUES (gen_random_uuid(), $1, 'sg_' || substr(md5(random()::text), 1, 12), '\\x00', $2) RETURNING id`,
      [p!.id, tags],
    );
    keys.push(k!.id);
  }
  const budgetIds: string[] = [];
  for (const b of budgets) {
    // Ids in creation order: where two budgets refuse alike, the one named is the first by id.
    const id = `${(++budgetsMade).toString(16).padStart(8, '0')}-0000-4000-8000-${randomBytes(6).toString('hex')}`;
    const {
      rows: [row],
    } = await db.query<{ id: string }>(
      `INSERT INTO budget (id, project_id, unit, "limit", period, hard, thresholds, scope, scope_key_id, scope_value)
       VALUES ($10, $1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
      [
        p!.id,
        b.unit,
        b.limit,
        b.period,
        b.hard,
        b.thresholds,
        b.scope,
        b.scope === 'API_KEY' ? keys[0] : null,
        b.scope === 'TAG' ? 'team=search' : b.scope === 'USER' ? 'ada' : null,
        id,
      ],
    );
    budgetIds.push(row!.id);
  }
  return { projectId: p!.id, keys, budgetIds };
}

type World = Awaited<ReturnType<typeof world>>;

function request(w: World, r: RequestSpec, at: Date): HoldRequest {
  const quote = quoteOf(r.unit, r.amount);
  return {
    projectId: w.projectId,
    apiKeyId: r.key === null ? null : w.keys[r.key]!,
    model: 'seedream-4.0',
    family: 'seedream',
    kind: 'image',
    hold: Money.of(r.unit, quote.amount).times(r.holdMultiplier),
    endUser: r.user,
    tags: [...(r.key === 0 ? ['team=search'] : []), ...r.tags],
    quote,
    priceBookVersion: r.version,
    ...(r.idempotencyKey ? { idempotencyKey: r.idempotencyKey, requestHash: `hash-${r.amount}` } : {}),
    ...(r.acceptedNow ? {} : { acceptedAt: at }),
  };
}

/** An outcome with this world's ids replaced by their places (task n, budget n, key n). */
function portable(o: HoldOutcome, w: World, tasks: string[]): unknown {
  const task = (id: string) => `task ${tasks.indexOf(id)}`;
  switch (o.outcome) {
    case 'held':
      tasks.push(o.taskId);
      return { outcome: 'held', task: task(o.taskId) };
    case 'refused':
      return {
        ...o,
        budgetId: `budget ${w.budgetIds.indexOf(o.budgetId)}`,
        scopeValue: o.scope === 'API_KEY' ? 'key 0' : o.scopeValue,
      };
    case 'stale_price':
    case 'limited':
      return o;
    default:
      return { ...o, taskId: task(o.taskId) };
  }
}

/** Everything a hold writes, in this world's terms (ids as places, times relative to the task's acceptance). */
async function state(db: Database, w: World, acceptedAt: Date) {
  const budget = (id: string) => `budget ${w.budgetIds.indexOf(id)}`;
  const { rows: tasks } = await db.query(
    `SELECT t.id::text, coalesce(array_position($2::uuid[], t.api_key_id), 0) AS key, t.end_user, t.tags, t.model, t.family, t.kind, t.unit, t.status,
            t.price_basis, t.price_book_version, t.exactness, t.estimate_amount::text, t.estimate_tier, t.estimate_warnings, t.estimate_lines::text,
            t.hold_amount::text, t.idempotency_key, t.request_hash, t.needs_review, t.review_reason, t.accepted_at = $3 AS accepted_as_asked,
            t.updated_at = t.accepted_at AS updated_at_acceptance
     FROM task t WHERE t.project_id = $1 ORDER BY t.id`,
    [w.projectId, w.keys, acceptedAt],
  );
  const taskPlace = new Map(tasks.map((t, i) => [t.id as string, i]));
  const { rows: entries } = await db.query(
    `SELECT e.task_id::text AS task, e.kind, e.unit, e.amount::text, e.effective_at = t.accepted_at AS at_acceptance, e.reason, e.belongs_to
     FROM ledger_entry e JOIN task t ON t.id = e.task_id WHERE e.project_id = $1 ORDER BY e.id`,
    [w.projectId],
  );
  const { rows: balances } = await db.query(
    `SELECT p.budget_id::text AS budget, p.period_start, p.period_end, p.subject, p.spent::text, p.held::text
     FROM budget_period p JOIN budget b ON b.id = p.budget_id WHERE b.project_id = $1 ORDER BY array_position($2::uuid[], p.budget_id), p.period_start, p.subject`,
    [w.projectId, w.budgetIds],
  );
  const { rows: alerts } = await db.query(
    `SELECT a.budget_id::text AS budget, a.period_start, a.subject, a.threshold, a.used_amount::text
     FROM budget_alert a JOIN budget b ON b.id = a.budget_id WHERE b.project_id = $1 ORDER BY array_position($2::uuid[], a.budget_id), a.subject, a.threshold`,
    [w.projectId, w.budgetIds],
  );
  return {
    tasks: tasks.map(({ id: _id, ...t }) => t),
    entries: entries.map((e) => ({ ...e, task: taskPlace.get(e.task as string) })),
    balances: balances.map((b) => ({ ...b, budget: budget(b.budget as string) })),
    alerts: alerts.map((a) => ({ ...a, budget: budget(a.budget as string) })),
  };
}

let db: Database;
beforeAll(async () => {
  db = new Database(await freshDatabase(), 24);
  await db.query(
    `INSERT INTO price_book_version (version, effective_at, note) VALUES (1, '2026-01-01', 'hold-alone test')`,
  );
});
afterAll(() => db.close());

test('a request alone leaves exactly what the batch function leaves, for any budgets and requests (fast-check)', async () => {
  let alonePaths = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(budgetSpec, { maxLength: 5 }),
      fc.array(requestSpec, { minLength: 1, maxLength: 8 }),
      async (budgets, requests) => {
        const [a, b] = [await world(db, budgets), await world(db, budgets)];
        // A fixed acceptance time inside the current period, for the requests that carry one.
        const at = new Date(Math.floor(Date.now() / 60_000) * 60_000);
        const [tasksA, tasksB]: string[][] = [[], []];
        for (const r of requests) {
          const viaAlone = await alone(db, request(a, r, at));
          const viaBatch = (await holdInBatch(db, [request(b, r, at)]))[0]!;
          if (viaAlone.path === 'alone') alonePaths++;
          expect(portable(viaAlone.outcome, a, tasksA)).toEqual(portable(viaBatch, b, tasksB));
        }
        expect(await state(db, a, at)).toEqual(await state(db, b, at));
      },
    ),
    { numRuns: 60 },
  );
  expect(alonePaths).toBeGreaterThan(50); // the common case took the one-request path
  expect(await reconcile(db)).toEqual([]);
});

test('300 concurrent requests alone over two instances: exactly what fits, never over a limit, each threshold once, reconcile clean', async () => {
  const w = await world(db, [
    { scope: 'PROJECT', unit: 'USD', limit: '2.00', hard: true, period: 'MONTHLY', thresholds: [50, 80, 100] },
    { scope: 'EACH_USER', unit: 'USD', limit: '0.10', hard: true, period: 'MONTHLY', thresholds: [50, 100] },
  ]);
  const instances = [
    new Database(db.pool.options.connectionString!, 12),
    new Database(db.pool.options.connectionString!, 12),
  ];
  try {
    // 40 users, 0.04 a request: each user fits 2 (0.10), the project 50 (2.00). Half the users
    // already hold once (their balances exist: their requests go alone); the others' first hold
    // makes their balance through the batch function. So exactly 50 - 20 = 30 of 300 are held.
    const spec = (i: number): RequestSpec => ({
      key: 0,
      user: `user-${i % 40}`,
      tags: [],
      unit: 'USD',
      amount: '0.04',
      idempotencyKey: null,
      version: 1,
      acceptedNow: true,
      holdMultiplier: '1',
    });
    const before = [];
    for (let i = 0; i < 20; i++) before.push(await alone(db, request(w, spec(i), new Date())));
    expect(before.every((r) => r.outcome.outcome === 'held')).toBe(true);
    const results = await Promise.all(
      Array.from({ length: 300 }, (_, i) => alone(instances[i % 2]!, request(w, spec(i), new Date()))),
    );
    const held = results.filter((r) => r.outcome.outcome === 'held');
    expect(held).toHaveLength(30);
    expect(results.filter((r) => r.outcome.outcome === 'refused')).toHaveLength(270);
    expect(held.some((r) => r.path === 'alone') && held.some((r) => r.path === 'batch')).toBe(true);
    const { rows } = await db.query<{ scope: string; subject: string; used: string }>(
      `SELECT b.scope::text, p.subject, (p.spent + p.held)::text AS used FROM budget_period p JOIN budget b ON b.id = p.budget_id WHERE b.project_id = $1`,
      [w.projectId],
    );
    expect(rows.find((r) => r.scope === 'PROJECT')!.used).toBe('2.00');
    for (const r of rows.filter((x) => x.scope === 'EACH_USER')) expect(dec(r.used).lte('0.10')).toBe(true);
    const { rows: alerts } = await db.query<{ scope: string; subject: string; threshold: number; n: number }>(
      `SELECT b.scope::text, a.subject, a.threshold, count(*)::int AS n FROM budget_alert a JOIN budget b ON b.id = a.budget_id
       WHERE b.project_id = $1 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
      [w.projectId],
    );
    expect(alerts.filter((a) => a.scope === 'PROJECT')).toEqual(
      [50, 80, 100].map((threshold) => ({ scope: 'PROJECT', subject: '', threshold, n: 1 })),
    );
    expect(alerts.every((a) => a.n === 1)).toBe(true);
    // A user with two holds (0.08 of 0.10) crossed 50 % once; one hold (0.04) crosses nothing, and no one reaches 100
    // %.
    const holdsOf = new Map<string, number>(Array.from({ length: 20 }, (_, i) => [spec(i).user!, 1]));
    results.forEach(
      (r, i) => r.outcome.outcome === 'held' && holdsOf.set(spec(i).user!, (holdsOf.get(spec(i).user!) ?? 0) + 1),
    );
    expect(Math.max(...holdsOf.values())).toBe(2);
    const twice = [...holdsOf]
      .filter(([, n]) => n === 2)
      .map(([user]) => user)
      .sort();
    expect(alerts.filter((a) => a.scope === 'EACH_USER').map((a) => [a.subject, a.threshold])).toEqual(
      twice.map((user) => [user, 50]),
    );
    expect(await reconcile(db)).toEqual([]);
  } finally {
    await Promise.all(instances.map((i) => i.close()));
  }
});
