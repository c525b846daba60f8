/**
 * `npm run bench:budget`: budget holds per second, spendgate's hold path against the plain-SQL
 * baseline (one transaction per hold: conditional UPDATE of the budget row + task and ledger
 * inserts), both at 64 concurrent clients, on one hot budget and spread over 100, in one run on
 * one embedded PostgreSQL with its default durability (fsync and synchronous_commit on).
 * A hot project with one limit (requests a minute; tasks in flight) measures what a limit costs a
 * hold (decisions §20). Then an exhaustion phase with tight limits counts overspend (must be 0)
 * and runs reconcile.
 * Prints figures and writes bench/results/budget.json; asserts nothing.
 */
import { Money } from '../src/pricing/money.js';
import pg from 'pg';
import { findRoute } from '../src/catalog/catalog.js';
import { Database } from '../src/database/database.js';
import { machine, publish, withScratchPostgres } from './support.js';
import { LedgerService, type HoldRequest } from '../src/ledger/ledger.service.js';
import { reconcile } from '../src/ledger/reconcile.js';
import { quote } from '../src/pricing/engine.js';
import { buildPriceBook, SPEC_PRICE_ROWS } from '../src/pricing/price-book.js';

const CLIENTS = 64;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const AMOUNT = '0.04'; // seedream-4.0 at 1K, exact

const route = findRoute('seedream-4.0')!;
const q = quote({ route, body: { model: route.id, prompt: 'bench' } }, buildPriceBook(1, new Date(0), SPEC_PRICE_ROWS));

async function main() {
  await withScratchPostgres('budget', ['max_connections=300'], async (server) => {
    const db = new Database(server.url, 16);
    const ledger = new LedgerService(db);

    const hot = await projects(db, 1, '1000000');
    const spread = await projects(db, 100, '1000000');
    await baselineSchema(db, 100);
    const four = await fourBudgets(db, '1000000');
    // Decisions §20: a hot project with one limit (never reached), of each kind a hold counts.
    const [rpm, inFlight] = await projects(db, 2, '1000000');
    await db.query(
      `INSERT INTO usage_limit (id, project_id, kind, amount, created_by)
       VALUES (gen_random_uuid(), $1, 'REQUESTS_PER_MINUTE', 2000000000, 'bench'), (gen_random_uuid(), $2, 'TASKS_IN_FLIGHT', 2000000000, 'bench')`,
      [rpm, inFlight],
    );

    const results = {
      machine: `${machine()}, PostgreSQL 18 embedded, defaults (fsync on)`,
      date: new Date().toISOString().slice(0, 10),
      clients: CLIENTS,
      secondsPerPhase: SECONDS,
      spendgateHot: await drive(() => ledger.hold(hold(hot[0]!))),
      spendgateSpread: await drive(() => ledger.hold(hold(spread[Math.floor(Math.random() * spread.length)]!))),
      // Decisions §7: one hot project whose every request matches four budgets (the project's, its
      // key's, its tag's, and an each-user budget; 1,000 users drawn at random).
      spendgateHotFourBudgets: await drive(() =>
        ledger.hold({
          ...hold(four.projectId),
          apiKeyId: four.apiKeyId,
          endUser: `user-${Math.floor(Math.random() * 1000)}`,
          tags: ['team=bench'],
        }),
      ),
      spendgateHotOneRequestsLimit: await drive(() => ledger.hold(hold(rpm!))),
      spendgateHotOneInFlightLimit: await drive(() => ledger.hold(hold(inFlight!))),
      baselineHot: await baseline(server.url, () => 1),
      baselineSpread: await baseline(server.url, () => 1 + Math.floor(Math.random() * 100)),
      overspend: await exhaustion(db, ledger),
    };
    const ratios = {
      hotVsBaseline: round(results.spendgateHot.perSecond / results.baselineHot.perSecond),
      fourBudgetsVsOne: round(results.spendgateHotFourBudgets.perSecond / results.spendgateHot.perSecond),
      oneRequestsLimitVsNone: round(results.spendgateHotOneRequestsLimit.perSecond / results.spendgateHot.perSecond),
      oneInFlightLimitVsNone: round(results.spendgateHotOneInFlightLimit.perSecond / results.spendgateHot.perSecond),
      spreadVsBaseline: round(results.spendgateSpread.perSecond / results.baselineSpread.perSecond),
    };
    const reconciliation = await reconcile(db);
    const out = {
      ...results,
      ratios,
      reconcile: reconciliation.length === 0 ? 'clean' : reconciliation,
      targets: { hot: 2000, spread: 4000, overspend: 0 },
    };
    publish('budget', out);
    await db.close();
  });
}

function hold(projectId: string): HoldRequest {
  return {
    projectId,
    apiKeyId: null,
    model: route.id,
    family: route.family,
    kind: route.kind,
    hold: Money.of('USD', q.amount),
    quote: q,
    priceBookVersion: 1,
  };
}

async function projects(db: Database, n: number, limit: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `WITH p AS (INSERT INTO project (id, name) SELECT gen_random_uuid(), 'bench-' || gen_random_uuid() FROM generate_series(1, $1) RETURNING id),
          b AS (INSERT INTO budget (id, project_id, unit, "limit", period, hard) SELECT gen_random_uuid(), id, 'USD', $2::numeric, 'MONTHLY', true FROM p RETURNING project_id)
     SELECT project_id AS id FROM b`,
    [n, limit],
  );
  return rows.map((r) => r.id);
}

/** A project with a key tagged team=bench and four USD budgets: PROJECT, API_KEY, TAG, EACH_USER. */
async function fourBudgets(db: Database, limit: string): Promise<{ projectId: string; apiKeyId: string }> {
  const { rows } = await db.query<{ project_id: string; key_id: string }>(
    `WITH p AS (INSERT INTO project (id, name) VALUES (gen_random_uuid(), 'bench-four') RETURNING id),
          k AS (INSERT INTO api_key (id, project_id, prefix, hash, tags) SELECT gen_random_uuid(), id, 'sg_bench4', '\\x00', '{team=bench}' FROM p RETURNING id, project_id),
          b AS (INSERT INTO budget (id, project_id, unit, "limit", period, hard, scope, scope_key_id, scope_value)
                SELECT gen_random_uuid(), k.project_id, 'USD', $1::numeric, 'MONTHLY', true, s.scope::"BudgetScope",
                       CASE WHEN s.scope = 'API_KEY' THEN k.id END, CASE WHEN s.scope = 'TAG' THEN 'team=bench' END
                FROM k, (VALUES ('PROJECT'), ('API_KEY'), ('TAG'), ('EACH_USER')) s(scope) RETURNING project_id)
     SELECT k.project_id, k.id AS key_id FROM k WHERE (SELECT count(*) FROM b) = 4`,
    [limit],
  );
  return { projectId: rows[0]!.project_id, apiKeyId: rows[0]!.key_id };
}

/** CLIENTS concurrent loops (worker w calls once(w)) for SECONDS; counts holds placed and refused. */
async function drive(once: (worker: number) => Promise<{ outcome: string }>) {
  let held = 0;
  let refused = 0;
  const until = Date.now() + SECONDS * 1000;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, worker) => {
      while (Date.now() < until) {
        const r = await once(worker);
        if (r.outcome === 'held') held++;
        else refused++;
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { held, refused, perSecond: Math.round(held / seconds) };
}

async function baselineSchema(db: Database, n: number) {
  await db.query(`CREATE TABLE baseline_budget (id int PRIMARY KEY, used numeric NOT NULL DEFAULT 0, lim numeric NOT NULL);
    CREATE TABLE baseline_task (id bigserial PRIMARY KEY, budget_id int NOT NULL, amount numeric NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
    CREATE TABLE baseline_ledger (id bigserial PRIMARY KEY, task_id bigint NOT NULL, kind text NOT NULL, amount numeric NOT NULL, created_at timestamptz NOT NULL DEFAULT now());`);
  await db.query(`INSERT INTO baseline_budget (id, lim) SELECT g, 1000000 FROM generate_series(1, $1) g`, [n]);
}

/** The baseline: one transaction per hold, CLIENTS connections, like a pgbench script. */
async function baseline(url: string, pick: () => number) {
  const clients = await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      return c;
    }),
  );
  try {
    // Each worker owns one connection, as each pgbench client does.
    return await drive(async (worker) => {
      const c = clients[worker]!;
      await c.query('BEGIN');
      const { rows } = await c.query(
        'UPDATE baseline_budget SET used = used + $2 WHERE id = $1 AND used + $2 <= lim RETURNING id',
        [pick(), AMOUNT],
      );
      if (rows[0]) {
        const t = await c.query<{ id: string }>(
          'INSERT INTO baseline_task (budget_id, amount) VALUES ($1, $2) RETURNING id',
          [rows[0].id, AMOUNT],
        );
        await c.query(`INSERT INTO baseline_ledger (task_id, kind, amount) VALUES ($1, 'hold', $2)`, [
          t.rows[0]!.id,
          AMOUNT,
        ]);
      }
      await c.query('COMMIT');
      return { outcome: rows[0] ? 'held' : 'refused' };
    });
  } finally {
    await Promise.all(clients.map((c) => c.end()));
  }
}

/** Tight limits (25 holds' worth on the hot budget, 5 on each spread one; 10 asked of each) under full concurrency. */
async function exhaustion(db: Database, ledger: LedgerService) {
  const hot = await projects(db, 1, '1.00');
  const spread = await projects(db, 100, '0.20');
  const attempts = 2000;
  await Promise.all(
    Array.from({ length: attempts }, (_, i) => ledger.hold(hold(i % 2 ? hot[0]! : spread[(i >> 1) % spread.length]!))),
  );
  const { rows } = await db.query<{ over: string; overspent_budgets: string; accepted: string }>(
    `
    SELECT coalesce(sum(greatest(bp.spent + bp.held - b."limit", 0)), 0)::text AS over,
           count(*) FILTER (WHERE bp.spent + bp.held > b."limit")::text AS overspent_budgets,
           (SELECT count(*) FROM ledger_entry e WHERE e.kind = 'hold' AND e.project_id = ANY($1))::text AS accepted
    FROM budget b JOIN budget_period bp ON bp.budget_id = b.id WHERE b.project_id = ANY($1)`,
    [[...hot, ...spread]],
  );
  return {
    attempts,
    accepted: Number(rows[0]!.accepted),
    expectedAccepted: 25 + 100 * 5,
    overspentAmount: rows[0]!.over,
    overspentBudgets: Number(rows[0]!.overspent_budgets),
  };
}

const round = (x: number) => Math.round(x * 100) / 100;

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
