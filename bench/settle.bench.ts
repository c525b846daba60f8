/**
 * `npm run bench:settle`: what one settlement costs PostgreSQL, and what the SKU roll-up and the books
 * counter added to it (decisions §19: spendgate_settle also sums its charge lines into spend_rollup_sku). One
 * embedded PostgreSQL (defaults, fsync on), one project with a monthly budget, chat tasks held as
 * the gateway holds them, each settled with three charge lines (input, cache read, output) as the
 * poller settles them. The rounds alternate the settlement as it is, the same function body without
 * the SKU roll-up's statement, and the settlement without the books counter's trigger (decisions §22:
 * cached reports), on the same database: settlements a second from 8 connections, and the mean of one
 * connection's calls. Writes bench/results/settle.json; asserts nothing.
 */
import { readFileSync } from 'node:fs';
import { Database } from '../src/database/database.js';
import { LedgerService, type HoldRequest } from '../src/ledger/ledger.service.js';
import { findRoute } from '../src/catalog/catalog.js';
import { quote } from '../src/pricing/engine.js';
import { Decimal, Money } from '../src/pricing/money.js';
import { buildPriceBook, SPEC_PRICE_ROWS } from '../src/pricing/price-book.js';
import type { Charge } from '../src/pricing/pricing.types.js';
import { machine, publish, speedProbe, withScratchPostgres } from './support.js';

const PER_ROUND = Number(process.env.BENCH_TASKS ?? 2_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CLIENTS = 8;

const SETTLE_SQL = readFileSync('prisma/functions/spendgate_settle.sql', 'utf8');
const SKU_START = SETTLE_SQL.indexOf("  -- The price list's grain");
const SKU_END = SETTLE_SQL.indexOf('  PERFORM spendgate_rollup_add(');
if (SKU_START < 0 || SKU_END < SKU_START)
  throw new Error('spendgate_settle.sql: the SKU roll-up statement is not found');
const WITHOUT_SKU = SETTLE_SQL.slice(0, SKU_START) + SETTLE_SQL.slice(SKU_END);

const line = (component: string, quantity: number, rate: string) => ({
  component,
  quantity: new Decimal(quantity),
  rate: new Decimal(rate),
  per: new Decimal(1_000_000),
  amount: new Decimal(quantity).times(rate).dividedBy(1_000_000),
});
const lines = [line('input', 1200, '147.784'), line('cache_read', 800, '14.742'), line('output', 400, '886.704')];
const charge: Charge = {
  unit: 'CREDITS',
  exactness: 'EXACT',
  amount: lines.reduce((s, l) => s.plus(l.amount), new Decimal(0)),
  tier: 'base',
  lines,
  warnings: [],
  needsReview: false,
};

await withScratchPostgres('settle', ['max_connections=100'], async (server) => {
  const probe = speedProbe();
  const db = new Database(server.url, CLIENTS + 2);
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO project (id, name) VALUES (gen_random_uuid(), 'settling') RETURNING id`,
  );
  const projectId = rows[0]!.id;
  await db.query(
    `INSERT INTO budget (id, project_id, unit, "limit", period, hard) VALUES (gen_random_uuid(), $1, 'CREDITS', 1000000000, 'MONTHLY', true)`,
    [projectId],
  );
  const ledger = new LedgerService(db);
  const route = findRoute('gpt-5.6-luna')!;
  const book = buildPriceBook(1, new Date(0), SPEC_PRICE_ROWS);
  const q = quote(
    { route, body: { model: route.id, messages: [{ role: 'user', content: 'bench' }], max_tokens: 400 } },
    book,
  );
  const request: HoldRequest = {
    projectId,
    apiKeyId: null,
    model: route.id,
    family: route.family,
    kind: route.kind,
    hold: Money.of('CREDITS', q.amount),
    quote: q,
    priceBookVersion: 1,
  };
  const rollup = { input_tokens: '1200', cache_read_tokens: '800', output_tokens: '400' };

  const held = async (n: number) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i += 64) {
      const batch = await Promise.all(Array.from({ length: Math.min(64, n - i) }, () => ledger.hold(request)));
      for (const b of batch) if (b.outcome === 'held') ids.push(b.taskId);
    }
    return ids;
  };
  const settleAll = async (ids: string[], clients: number) => {
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (next < ids.length) {
          const taskId = ids[next++]!;
          const r = await ledger.settle({ taskId, status: 'ready', charge, usage: {}, rollup });
          if (!r.settled) throw new Error(`task ${taskId} was not settled`);
        }
      }),
    );
    return performance.now() - started;
  };

  // Each variant's statements, run before its rounds: the settlement function, and the books counter's trigger
  // (decisions §22) on or off.
  const books = (on: boolean) =>
    `ALTER TABLE spend_rollup ${on ? 'ENABLE' : 'DISABLE'} TRIGGER spend_rollup_books_changed`;
  const variants: Array<[string, string[]]> = [
    ['as it is', [SETTLE_SQL, books(true)]],
    ['without the SKU roll-up', [WITHOUT_SKU, books(true)]],
    ['without the books counter', [SETTLE_SQL, books(false)]],
  ];
  const results: Record<string, { perSecond: number[]; meanMicros: number[] }> = Object.fromEntries(
    variants.map(([name]) => [name, { perSecond: [], meanMicros: [] }]),
  );
  await settleAll(await held(500), CLIENTS); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    // Each round in another order, so a drift of the machine's speed falls on every variant alike.
    const order = variants.map((_, i) => variants[(i + round) % variants.length]!);
    for (const [name, statements] of round % 2 ? order.reverse() : order) {
      for (const statement of statements) await db.query(statement);
      const ids = await held(PER_ROUND * 2);
      const ms = await settleAll(ids.slice(0, PER_ROUND), CLIENTS);
      results[name]!.perSecond.push(Math.round(PER_ROUND / (ms / 1000)));
      const alone = await settleAll(ids.slice(PER_ROUND, PER_ROUND + 500), 1);
      results[name]!.meanMicros.push(Math.round((alone * 1000) / 500));
    }
  }
  await db.query(books(true));
  await db.query(SETTLE_SQL);
  const { rows: sku } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM spend_rollup_sku');
  await db.close();
  publish('settle', {
    machine: machine(),
    date: new Date().toISOString(),
    speedProbeMs: [probe, speedProbe()],
    settlementsPerRound: PER_ROUND,
    clients: CLIENTS,
    results,
    skuRows: sku[0]!.n,
  });
});
