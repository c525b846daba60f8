/** A card of amounts, one line per unit; each keeps its exact value in data-amount. */
import type { Money } from '../api';
import { money } from '../format';

export function Amounts({ id, title, totals }: { id: string; title: string; totals: Money[] }) {
  return (
    <div class="card" data-testid={`card-${id}`}>
      <h2>{title}</h2>
      {totals.length === 0 && <p class="amount none">nothing</p>}
      {totals.map((m) => (
        <p class="amount" data-testid={`${id}-${m.unit}`} data-amount={m.amount}>
          {money(m.amount, m.unit)}
        </p>
      ))}
    </div>
  );
}
