/**
 * The admission rule (decisions §4) has one statement in SQL (spendgate_hold_fits and
 * spendgate_threshold_crossed) and three entry points that ask it: spendgate_hold_one (a request
 * alone), spendgate_place_holds (a batch, as a whole when it fits) and
 * spendgate_place_holds_in_order (one at a time). Here fast-check draws budgets (hard or soft,
 * limits, thresholds, a project's or a tag's, with or without a balance yet) and requests, and each
 * entry point is run on the same state (a transaction rolled back after each) against the rule
 * stated again in TypeScript, below: requests in order, each held when every budget it counts in
 * fits it, else refused with nothing written; the thresholds each crossing records.
 */
import { Decimal } from 'decimal.js';
import fc from 'fast-check';
import pg from 'pg';
import { freshDatabase } from '../support/harness.js';

const AT = '2026-11-15T12:00:00.000Z'; // every request's acceptance time: priced as carried, one monthly window
const TAGS = ['team=a', 'team=b'] as const;

interface BudgetSpec {
  hard: boolean;
  limitCents: number;
  thresholds: number[];
  tag: (typeof TAGS)[number] | null; // null: the project's budget
  balance: { spentCents: number; heldCents: number } | null; // null: no balance row yet this period
}
interface RequestSpec {
  amountCents: number;
  tags: string[];
}
interface Outcome {
  held: boolean[];
  balances: string[]; // each budget's spent/held after (no row: 0/0)
  crossings: string[]; // "budget#:threshold", sorted
  holdEntries: string; // the ledger's hold entries, summed
}

const cents = (n: number) => new Decimal(n).div(100);

/** The rule, stated again without SQL. */
function expected(budgets: BudgetSpec[], requests: RequestSpec[]): Outcome {
  const balance = budgets.map((b) => ({
    spent: cents(b.balance?.spentCents ?? 0),
    held: cents(b.balance?.heldCents ?? 0),
  }));
  const crossings = new Set<string>();
  const held: boolean[] = [];
  let entries = new Decimal(0);
  for (const r of requests) {
    const amount = cents(r.amountCents);
    const counted = budgets.map((b, i) => ({ b, i })).filter(({ b }) => b.tag === null || r.tags.includes(b.tag));
    const fits = counted.every(
      ({ b, i }) => !b.hard || balance[i]!.spent.plus(balance[i]!.held).plus(amount).lte(cents(b.limitCents)),
    );
    held.push(fits);
    if (!fits) continue;
    entries = entries.plus(amount);
    for (const { b, i } of counted) {
      const before = balance[i]!.spent.plus(balance[i]!.held);
      balance[i]!.held = balance[i]!.held.plus(amount);
      const after = before.plus(amount);
      for (const th of b.thresholds) {
        const mark = cents(b.limitCents).mul(th).div(100);
        if (amount.gt(0) && before.lt(mark) && after.gte(mark)) crossings.add(`${i}:${th}`);
      }
    }
  }
  return {
    held,
    balances: balance.map((x) => `${x.spent.toString()}/${x.held.toString()}`),
    crossings: [...crossings].sort(),
    holdEntries: entries.toString(),
  };
}

let pool: pg.Pool;
beforeAll(async () => {
  pool = new pg.Pool({ connectionString: await freshDatabase(), max: 2 });
}, 60_000);
afterAll(() => pool.end());

/** A project, a key, its budgets and their balances, committed; the ids to read them back by. */
async function arrange(budgets: BudgetSpec[]) {
  const {
    rows: [made],
  } = await pool.query<{ project: string; key: string }>(
    `WITH p AS (INSERT INTO project (id, name) VALUES (gen_random_uuid(), 'admission ' || gen_random_uuid()) RETURNING id),
          k AS (INSERT INTO api_key (id, project_id, prefix, hash) SELECT gen_random_uuid(), p.id, substr(md5(random()::text), 1, 12), '\\x00' FROM p RETURNING id, project_id)
     SELECT project_id::text AS project, id::text AS key FROM k`,
  );
  const ids: string[] = [];
  for (const b of budgets) {
    const {
      rows: [row],
    } = await pool.query<{ id: string }>(
      `INSERT INTO budget (id, project_id, unit, "limit", period, hard, thresholds, scope, scope_value)
       VALUES (gen_random_uuid(), $1, 'USD', $2, 'MONTHLY', $3, $4, $5, $6) RETURNING id::text`,
      [made!.project, cents(b.limitCents).toString(), b.hard, b.thresholds, b.tag ? 'TAG' : 'PROJECT', b.tag],
    );
    ids.push(row!.id);
    if (b.balance) {
      await pool.query(
        `INSERT INTO budget_period (budget_id, period_start, period_end, subject, spent, held)
         SELECT $1, w.period_start, w.period_end, '', $2, $3 FROM spendgate_period_window('MONTHLY', $4) w`,
        [row!.id, cents(b.balance.spentCents).toString(), cents(b.balance.heldCents).toString(), AT],
      );
    }
  }
  return { project: made!.project, key: made!.key, budgetIds: ids };
}

const request = (project: string, key: string, r: RequestSpec, i: number) => ({
  i,
  project_id: project,
  api_key_id: key,
  model: 'seedream-4.0',
  family: 'seedream',
  kind: 'image',
  unit: 'USD',
  hold_amount: cents(r.amountCents).toString(),
  estimate_amount: cents(r.amountCents).toString(),
  exactness: 'EXACT',
  estimate_tier: null,
  estimate_warnings: [],
  price_basis: {},
  price_book_version: 1,
  lines: null,
  idempotency_key: null,
  request_hash: null,
  accepted_at: AT,
  end_user: null,
  tags: r.tags,
});

type Entry = 'hold_one' | 'place_holds' | 'place_holds_in_order';

/** One entry point on the arranged state, read back, then undone. */
async function run(
  entry: Entry,
  arranged: Awaited<ReturnType<typeof arrange>>,
  requests: RequestSpec[],
): Promise<Outcome> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const payload = requests.map((r, i) => request(arranged.project, arranged.key, r, i));
    let held: boolean[];
    if (entry === 'place_holds') {
      const { rows } = await client.query<{ i: number; outcome: string }>(
        'SELECT i, outcome FROM spendgate_place_holds($1::json) ORDER BY i',
        [JSON.stringify(payload)],
      );
      held = rows.map((r) => r.outcome === 'held');
    } else if (entry === 'place_holds_in_order') {
      const { rows } = await client.query<{ i: number; outcome: string }>(
        `SELECT i, outcome FROM spendgate_place_holds_in_order(ARRAY(SELECT r FROM json_populate_recordset(NULL::spendgate_hold_request, $1::json) r ORDER BY r.i)) ORDER BY i`,
        [JSON.stringify(payload)],
      );
      held = rows.map((r) => r.outcome === 'held');
    } else {
      // As the gateway does: the request alone first; 'fallback' (a balance missing, or one that does not fit) goes to
      // the batch function.
      held = [];
      for (const p of payload) {
        const {
          rows: [one],
        } = await client.query<{ outcome: string }>(
          `SELECT outcome FROM spendgate_hold_one($1, $2, NULL, $3, $4, $5, $6, 'USD', $7, $7, 'EXACT', NULL, '{}', '{}'::jsonb, 1, '{}', '{}', '{}', '{}', '{}', NULL, NULL, $8, NULL)`,
          [p.project_id, p.api_key_id, p.tags, p.model, p.family, p.kind, p.hold_amount, AT],
        );
        if (one!.outcome === 'held') held.push(true);
        else {
          expect(one!.outcome).toBe('fallback');
          const {
            rows: [again],
          } = await client.query<{ outcome: string }>('SELECT outcome FROM spendgate_place_holds($1::json)', [
            JSON.stringify([{ ...p, i: 0 }]),
          ]);
          held.push(again!.outcome === 'held');
        }
      }
    }
    const { rows: balances } = await client.query<{ id: string; b: string }>(
      `SELECT b.id::text, coalesce(p.spent, 0)::text || '/' || coalesce(p.held, 0)::text AS b
       FROM budget b LEFT JOIN budget_period p ON p.budget_id = b.id AND p.period_start = (SELECT period_start FROM spendgate_period_window('MONTHLY', $2))
       WHERE b.id = ANY($1::uuid[])`,
      [arranged.budgetIds, AT],
    );
    const { rows: alerts } = await client.query<{ id: string; threshold: number }>(
      'SELECT budget_id::text AS id, threshold FROM budget_alert WHERE budget_id = ANY($1::uuid[])',
      [arranged.budgetIds],
    );
    const {
      rows: [entries],
    } = await client.query<{ total: string }>(
      `SELECT coalesce(sum(amount), 0)::text AS total FROM ledger_entry WHERE project_id = $1 AND kind = 'hold'`,
      [arranged.project],
    );
    const byId = new Map(balances.map((r) => [r.id, r.b]));
    return {
      held,
      balances: arranged.budgetIds.map((id) =>
        byId
          .get(id)!
          .split('/')
          .map((x) => new Decimal(x).toString())
          .join('/'),
      ),
      crossings: alerts.map((a) => `${arranged.budgetIds.indexOf(a.id)}:${a.threshold}`).sort(),
      holdEntries: new Decimal(entries!.total).toString(),
    };
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}

/**
 * Amounts from a few round figures as often as from anywhere: a hold that lands exactly on a limit is the edge that
 * matters.
 */
const centsArb = (max: number) =>
  fc.oneof(fc.constantFrom(...[0, 10, 25, 50, 75, 100, 150].filter((c) => c <= max)), fc.integer({ min: 0, max }));
const budgetArb: fc.Arbitrary<BudgetSpec> = fc.record({
  hard: fc.boolean(),
  limitCents: centsArb(300),
  thresholds: fc.uniqueArray(fc.constantFrom(25, 50, 80, 100), { maxLength: 3 }),
  tag: fc.constantFrom(null, ...TAGS),
  balance: fc.option(fc.record({ spentCents: centsArb(250), heldCents: centsArb(100) }), { nil: null }),
});
const requestArb: fc.Arbitrary<RequestSpec> = fc.record({ amountCents: centsArb(150), tags: fc.subarray([...TAGS]) });

test('the three entry points admit, refuse and record crossings as the rule says', async () => {
  let admitted = 0;
  let refused = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(budgetArb, { minLength: 1, maxLength: 4 }),
      fc.array(requestArb, { minLength: 1, maxLength: 6 }),
      async (budgets, requests) => {
        const want = expected(budgets, requests);
        admitted += want.held.filter(Boolean).length;
        refused += want.held.filter((h) => !h).length;
        const arranged = await arrange(budgets);
        for (const entry of ['place_holds_in_order', 'place_holds', 'hold_one'] as const) {
          expect({ entry, ...(await run(entry, arranged, requests)) }).toEqual({ entry, ...want });
        }
      },
    ),
    { numRuns: 80 },
  );
  // The draws reach both answers (a property that only ever admits proves little).
  expect(admitted).toBeGreaterThan(20);
  expect(refused).toBeGreaterThan(20);
}, 120_000);
