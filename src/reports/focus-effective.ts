/**
 * FOCUS EffectiveCost with commitments (decisions §19): a month's true-up (the unused commitment,
 * billed as an adjustment on its last day) is amortized over the month's usage rows of its unit, in
 * proportion to their billed amounts, each share rounded half-even to 10 places; the true-up's own
 * row keeps only the rounding residue. So EffectiveCost adds up to BilledCost over the month, and a
 * usage row's EffectiveCost is what it cost once the commitment is paid for.
 */
import { trueUpsIn } from '../commitments/true-ups.js';
import type { Database } from '../database/database.js';
import { Decimal, ZERO, type Decimal as DecimalValue } from '../pricing/money.js';

const PLACES = 10;

/** A FOCUS row's key at the export's grain (day, project, key, model, unit, price-book version). */
export const rowKey = (day: string, project: string, key: string, model: string, unit: string, version: number) =>
  [day, project, key, model, unit, version].join('|');

/** What to add to each row's billed amount (in its unit) for its EffectiveCost, by rowKey. */
export async function effectiveDeltas(db: Pick<Database, 'query'>, from: Date, to: Date) {
  const deltas = new Map<string, DecimalValue>();
  for (const t of await trueUpsIn(db, from, to)) {
    const { rows } = await db.query<{
      day: string;
      project: string;
      key: string;
      model: string;
      version: number;
      amount: string;
    }>(
      `SELECT period::text AS day, project_id::text AS project, value AS key, model, price_book_version AS version, amount::text AS amount
       FROM spend_rollup_by
       WHERE dimension = 'apiKey' AND period >= $1::date AND period < ($1::date + interval '1 month') AND unit = $2::"Unit"
         AND model <> '(adjustment)' AND amount <> 0`,
      [t.month, t.unit],
    );
    const usage = rows.reduce((s, r) => s.plus(r.amount), ZERO);
    if (usage.lessThanOrEqualTo(0)) continue;
    const trueUp = new Decimal(t.amount);
    let spread = ZERO;
    for (const r of rows) {
      const share = trueUp.times(r.amount).dividedBy(usage).toDecimalPlaces(PLACES, Decimal.ROUND_HALF_EVEN);
      deltas.set(rowKey(r.day, r.project, r.key, r.model, t.unit, r.version), share);
      spread = spread.plus(share);
    }
    const last = new Date(Date.parse(`${t.month}T00:00:00Z`));
    last.setUTCMonth(last.getUTCMonth() + 1, 0);
    const own = rowKey(last.toISOString().slice(0, 10), t.projectId, '', '(adjustment)', t.unit, 0);
    deltas.set(own, (deltas.get(own) ?? ZERO).minus(spread));
  }
  return deltas;
}
