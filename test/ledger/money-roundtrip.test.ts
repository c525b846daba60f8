/**
 * Amounts survive a round trip through the ledger unchanged: the exact decimal strings the engine
 * produces go through the ledger's own functions into its NUMERIC columns (ledger_entry,
 * charge_line, task) and come back equal, digit for digit (no float on the way).
 */
import fc from 'fast-check';
import type { Gateway } from '../../src/bootstrap.js';
import { LedgerService } from '../../src/ledger/ledger.service.js';
import { price } from '../../src/pricing/engine.js';
import { dec, Money } from '../../src/pricing/money.js';
import { PriceBookService } from '../../src/pricing/price-book.service.js';
import { chatBody, heldTask } from '../support/builders.js';
import { freshDatabase, gateway, projectWithKey, sql } from '../support/harness.js';

let gw: Gateway;
let projectId: string;

beforeAll(async () => {
  gw = await gateway(await freshDatabase(), { POLLER_ENABLED: 'false' });
  ({ projectId } = await projectWithKey(gw));
});
afterAll(() => gw.close());

test('arbitrary exact decimals posted as adjustments read back from ledger_entry unchanged', async () => {
  const decimalText = fc
    .tuple(
      fc.boolean(),
      fc.bigInt({ min: 0n, max: 10n ** 30n }),
      fc.bigInt({ min: 0n, max: 10n ** 20n }),
      fc.integer({ min: 0, max: 20 }),
    )
    .map(
      ([neg, whole, frac, places]) =>
        `${neg ? '-' : ''}${whole}${places ? `.${frac.toString().padStart(places, '0').slice(0, places)}` : ''}`,
    )
    .filter((text) => !dec(text).isZero()); // an adjustment is never zero
  const ledger = gw.app.get(LedgerService);
  await fc.assert(
    fc.asyncProperty(decimalText, async (text) => {
      const entry = await ledger.adjust(
        projectId,
        Money.of('USD', text),
        'round trip',
        undefined,
        new Date('2026-11-02T00:00:00Z'),
      );
      const [row] = await sql<{ amount: string }>(gw, 'SELECT amount::text AS amount FROM ledger_entry WHERE id = $1', [
        entry,
      ]);
      expect(dec(row!.amount).eq(dec(text))).toBe(true);
    }),
    { numRuns: 200 },
  );
});

test('engine charges settled by the ledger read back from charge_line, task and ledger_entry unchanged', async () => {
  const ledger = gw.app.get(LedgerService);
  const book = gw.app.get(PriceBookService).inForce();
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom('gpt-5.6-luna', 'gpt-5.6-sol', 'glm-5.3'),
      fc.nat(600_000),
      fc.nat(100_000),
      fc.nat(50_000),
      async (model, prompt, cached, out) => {
        const held = await heldTask(gw, { projectId, body: chatBody({ model }) });
        const usage = {
          prompt_tokens: prompt + cached,
          completion_tokens: out,
          prompt_tokens_details: { cached_tokens: cached },
        };
        const charge = price({ model, unit: 'CREDITS', basis: held.quote.basis }, usage, book);
        const { settled } = await ledger.settle({ taskId: held.taskId, status: 'ready', charge, usage, rollup: {} });
        expect(settled).toBe(true);
        const lines = await sql<{ amount: string }>(
          gw,
          `SELECT amount::text AS amount FROM charge_line WHERE task_id = $1 ORDER BY seq`,
          [held.taskId],
        );
        expect(lines.map((l) => l.amount)).toEqual(charge.lines.map((l) => l.amount.toFixed()));
        const [task] = await sql<{ charge: string; entry: string | null }>(
          gw,
          `SELECT t.charge_amount::text AS charge, (SELECT e.amount::text FROM ledger_entry e WHERE e.task_id = t.id AND e.kind = 'charge') AS entry
         FROM task t WHERE t.id = $1`,
          [held.taskId],
        );
        expect(dec(task!.charge).eq(charge.amount)).toBe(true);
        if (!charge.amount.isZero()) expect(dec(task!.entry!).eq(charge.amount)).toBe(true);
      },
    ),
    { numRuns: 150 },
  );
});
