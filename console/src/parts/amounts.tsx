/** Amounts as the console shows them (format.ts): the readable figure, the exact one in its tooltip and data-amount. */
import type { Money } from '../api';
import { exactMoney, money, percentChange, subtract, UNITS } from '../format';

export function Amount({ amount, unit, testid }: Money & { testid?: string }) {
  return (
    <span title={exactMoney(amount, unit)} data-amount={amount} data-unit={unit} data-testid={testid}>
      {money(amount, unit)}
    </span>
  );
}

/** A card of amounts, one line per unit, each with the previous period's change when given. */
export function Amounts({
  id,
  title,
  totals,
  previous,
}: {
  id: string;
  title: string;
  totals: Money[];
  previous?: Money[] | undefined;
}) {
  return (
    <div class="card" data-testid={`card-${id}`}>
      <h2>{title}</h2>
      {totals.length === 0 && <p class="amount none">nothing</p>}
      {totals.map((m) => (
        <p class="amount" data-testid={`${id}-${m.unit}`} data-amount={m.amount} title={exactMoney(m.amount, m.unit)}>
          {money(m.amount, m.unit)}
        </p>
      ))}
      {previous && <Change totals={totals} previous={previous} testid={`${id}-change`} />}
    </div>
  );
}

/** Against the previous period of the same length, per unit: the difference and its percentage. */
export function Change({ totals, previous, testid }: { totals: Money[]; previous: Money[]; testid: string }) {
  const units = UNITS.filter((u) => totals.some((m) => m.unit === u) || previous.some((m) => m.unit === u));
  return (
    <p class="change" data-testid={testid}>
      {units.map((unit) => {
        const now = totals.find((m) => m.unit === unit)?.amount ?? '0';
        const before = previous.find((m) => m.unit === unit)?.amount ?? '0';
        const diff = subtract(now, before);
        const pct = percentChange(now, before);
        return (
          <span data-unit={unit} data-previous={before} data-difference={diff}>
            {diff.startsWith('-') ? '' : '+'}
            {money(diff, unit)} {pct ? `(${pct})` : '(none before)'} vs previous period ({money(before, unit)}){' '}
          </span>
        );
      })}
    </p>
  );
}
