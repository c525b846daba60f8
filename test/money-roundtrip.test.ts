/**
 * Amounts survive a round trip through PostgreSQL unchanged: the exact decimal strings the engine
 * produces go into NUMERIC columns and come back equal, digit for digit (no float on the way).
 */
import fc from 'fast-check';
import pg from 'pg';
import { linesJson } from '../src/ledger/ledger.service.js';
import { price, type PriceBasis } from '../src/pricing/engine.js';
import { dec } from '../src/pricing/money.js';
import { buildPriceBook, SPEC_PRICE_ROWS } from '../src/pricing/price-book.js';
import { freshDatabase } from './support/harness.js';

const book = buildPriceBook(1, new Date('2026-01-01T00:00:00Z'), SPEC_PRICE_ROWS);
let client: pg.Client;

beforeAll(async () => {
  client = new pg.Client({ connectionString: await freshDatabase() });
  await client.connect();
  await client.query('CREATE TEMP TABLE roundtrip (quantity numeric, rate numeric, per numeric, amount numeric)');
});
afterAll(() => client.end());

test('arbitrary exact decimals round-trip through NUMERIC unchanged', async () => {
  const decimalText = fc
    .tuple(fc.boolean(), fc.bigInt({ min: 0n, max: 10n ** 30n }), fc.bigInt({ min: 0n, max: 10n ** 20n }), fc.integer({ min: 0, max: 20 }))
    .map(([neg, whole, frac, places]) => `${neg ? '-' : ''}${whole}${places ? `.${frac.toString().padStart(places, '0').slice(0, places)}` : ''}`);
  await fc.assert(
    fc.asyncProperty(decimalText, async (text) => {
      const { rows } = await client.query<{ v: string }>('SELECT $1::numeric::text AS v', [dec(text).toFixed()]);
      expect(dec(rows[0]!.v).eq(dec(text))).toBe(true);
    }),
    { numRuns: 300 },
  );
});

test('engine charge lines round-trip through charge_line-shaped NUMERIC columns unchanged', async () => {
  const basis: PriceBasis = { kind: 'chat', inputTokensEstimate: 0, maxTokens: 1, maxTokensSource: 'request' };
  await fc.assert(
    fc.asyncProperty(fc.constantFrom('gpt-5.6-luna', 'gpt-5.6-sol', 'glm-5.3'), fc.nat(600_000), fc.nat(100_000), fc.nat(50_000), async (model, prompt, cached, out) => {
      const charge = price({ model, unit: 'CREDITS', basis }, { prompt_tokens: prompt + cached, completion_tokens: out, prompt_tokens_details: { cached_tokens: cached } }, book);
      await client.query('TRUNCATE roundtrip');
      await client.query(
        `INSERT INTO roundtrip SELECT (l->>'quantity')::numeric, (l->>'rate')::numeric, (l->>'per')::numeric, (l->>'amount')::numeric
         FROM jsonb_array_elements($1::jsonb) l`,
        [linesJson(charge.lines)],
      );
      const { rows } = await client.query<{ amount: string; total: string }>('SELECT amount::text, (SELECT sum(amount) FROM roundtrip)::text AS total FROM roundtrip');
      expect(rows.map((r) => r.amount)).toEqual(charge.lines.map((l) => l.amount.toFixed()));
      if (rows.length) expect(dec(rows[0]!.total).eq(charge.amount)).toBe(true);
    }),
    { numRuns: 200 },
  );
});
