/** A ranked list (largest spend first), per unit. */
import type { ComponentChildren } from 'preact';
import type { Money } from '../api';
import { money } from '../format';

export interface Ranked {
  key: string;
  tasks: number;
  money: Money;
}

export function TopList({ id, title, rows, empty }: { id: string; title: ComponentChildren; rows: Ranked[]; empty?: string }) {
  return (
    <div class="card ranked" data-testid={`top-${id}`}>
      <h2>{title}</h2>
      {rows.length === 0 ? (
        <p class="none">{empty ?? 'nothing in this range'}</p>
      ) : (
        <table>
          <tbody>
            {rows.map((r) => (
              <tr>
                <td class="key">{r.key}</td>
                <td class="num">{r.tasks} tasks</td>
                <td class="num" data-amount={r.money.amount} data-unit={r.money.unit}>
                  {money(r.money.amount, r.money.unit)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
