/**
 * A commitment's months (decisions §19), plain TypeScript. For each month it is in force:
 *   committed = amount + carried in (rollover: the previous month's remaining; else 0)
 *   used      = every project's spend posted in the month in its unit, true-ups excluded
 *   remaining = committed − used, at least 0;  overage = used − committed, at least 0
 *   shortfall = what the month's close trues up: its remaining (rollover: only in the last month).
 */
import { Decimal, ZERO } from '../pricing/money.js';

export interface CommitmentTerms {
  amount: Decimal;
  /** `YYYY-MM` */
  startsMonth: string;
  endsMonth: string | null;
  rollover: boolean;
}

export interface CommitmentMonth {
  month: string;
  committed: Decimal;
  carriedIn: Decimal;
  used: Decimal;
  remaining: Decimal;
  overage: Decimal;
  /** What the month's close posts (or posted). */
  shortfall: Decimal;
}

export const nextMonth = (month: string) => {
  const [y, m] = month.split('-').map(Number) as [number, number];
  return new Date(Date.UTC(y, m, 1)).toISOString().slice(0, 7);
};

export const inForceIn = (c: CommitmentTerms, month: string) =>
  month >= c.startsMonth && (c.endsMonth === null || month <= c.endsMonth);

/** The months from its start through `through` (or its end, if earlier), each with its figures. */
export function commitmentMonths(
  c: CommitmentTerms,
  through: string,
  usedIn: (month: string) => Decimal,
): CommitmentMonth[] {
  const out: CommitmentMonth[] = [];
  let carried = ZERO;
  for (let month = c.startsMonth; month <= through && inForceIn(c, month); month = nextMonth(month)) {
    const committed = c.amount.plus(carried);
    const used = usedIn(month);
    const remaining = Decimal.max(ZERO, committed.minus(used));
    const last = c.endsMonth === month;
    out.push({
      month,
      committed,
      carriedIn: carried,
      used,
      remaining,
      overage: Decimal.max(ZERO, used.minus(committed)),
      shortfall: !c.rollover || last ? remaining : ZERO,
    });
    carried = c.rollover ? remaining : ZERO;
  }
  return out;
}
