/**
 * What bench:statement-cpu and bench:hold-batches hold against: a project with two hard monthly
 * budgets (USD and credits, as bench:gateway's projects have), price book version 1 in force, and
 * a chat request of gpt-5.6-luna (its hold an estimate of 256 output tokens) priced with it. The
 * request and its quote also price bench:floor's skeleton that writes the books' rows.
 */
import { findRoute } from '../src/catalog/catalog.js';
import type { Database } from '../src/database/database.js';
import type { HoldRequest } from '../src/ledger/holds.js';
import { quote } from '../src/pricing/engine.js';
import { buildPriceBook, SPEC_PRICE_ROWS } from '../src/pricing/price-book.js';
import { Money } from '../src/pricing/money.js';

export const probeRoute = findRoute('gpt-5.6-luna')!;
const body = {
  model: probeRoute.id,
  messages: [{ role: 'user', content: 'Summarise the quarterly report in three bullet points.' }],
  max_tokens: 256,
};
export const probeQuote = quote({ route: probeRoute, body }, buildPriceBook(1, new Date(0), SPEC_PRICE_ROWS));

/** Makes the project and its budgets; answers its id and a maker of hold requests for it. */
export async function holdProbe(db: Database): Promise<{ projectId: string; request: () => HoldRequest }> {
  const { rows } = await db.query<{ id: string }>(
    `WITH p AS (INSERT INTO project (id, name) VALUES (gen_random_uuid(), 'probe') RETURNING id),
          b AS (INSERT INTO budget (id, project_id, unit, "limit", period, hard)
                SELECT gen_random_uuid(), id, u::"Unit", 1000000000, 'MONTHLY', true FROM p, unnest(ARRAY['USD', 'CREDITS']) u RETURNING project_id)
     SELECT DISTINCT project_id AS id FROM b`,
  );
  const projectId = rows[0]!.id;
  // Version 1 in force, as a gateway's first start seeds it: the hold compares the quote's version with it.
  await db.query(
    `INSERT INTO price_book_version (version, effective_at, note) VALUES (1, '2026-01-01', 'probe') ON CONFLICT DO NOTHING`,
  );
  const request = (): HoldRequest => ({
    projectId,
    apiKeyId: null,
    model: probeRoute.id,
    family: probeRoute.family,
    kind: probeRoute.kind,
    hold: Money.of(probeQuote.unit, probeQuote.amount),
    quote: probeQuote,
    priceBookVersion: 1,
  });
  return { projectId, request };
}

/** The probe's task columns a bench writes by hand, in this order: project, model, family, kind, unit,
 * price basis (JSON) and the quote's amount. */
export function probeTaskValues(projectId: string): string[] {
  return [
    projectId,
    probeRoute.id,
    probeRoute.family,
    probeRoute.kind,
    probeQuote.unit,
    JSON.stringify(probeQuote.basis),
    probeQuote.amount.toFixed(),
  ];
}
