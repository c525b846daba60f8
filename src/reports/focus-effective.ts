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
import { focusGrain, groupKey } from './focus-grain.js';

const PLACES = 10;

/** What to add to each row's billed amount (in its unit) for its EffectiveCost, by the row's key (focus-grain.ts). */
export async function effectiveDeltas(db: Pick<Database, 'query'>, from: Date, to: Date) {
  const deltas = new Map<string, DecimalValue>();
  const months = new Map<string, Awaited<ReturnType<typeof focusGrain>>>();
  for (const t of await trueUpsIn(db, from, to)) {
    const start = new Date(Date.parse(`${t.month}T00:00:00Z`));
    const end = new Date(start);
    end.setUTCMonth(end.getUTCMonth() + 1);
    if (!months.has(t.month)) months.set(t.month, await focusGrain(db, start, end));
    const rows = months
      .get(t.month)!
      .filter((r) => r.kind === 'usage' && r.group.unit === t.unit && !new Decimal(r.amount).isZero());
    const usage = rows.reduce((s, r) => s.plus(r.amount), ZERO);
    if (usage.lessThanOrEqualTo(0)) continue;
    const trueUp = new Decimal(t.amount);
    let spread = ZERO;
    for (const r of rows) {
      const share = trueUp.times(r.amount).dividedBy(usage).toDecimalPlaces(PLACES, Decimal.ROUND_HALF_EVEN);
      deltas.set(r.key, share);
      spread = spread.plus(share);
    }
    const last = new Date(end.getTime() - 86_400_000);
    const own = `${groupKey(last.toISOString().slice(0, 10), t.projectId, '', '(adjustment)', t.unit, 0)}|`;
    deltas.set(own, (deltas.get(own) ?? ZERO).minus(spread));
  }
  return deltas;
}
