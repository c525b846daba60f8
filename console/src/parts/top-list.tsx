/** A ranked list (largest spend first), per unit; each row opens its tasks and may show the previous period. */
import type { ComponentChildren } from 'preact';
import type { Money } from '../api';
import { change, money, plural } from '../format';
import { Amount } from './amounts';

export interface Ranked {
  key: string;
  /** what people read for the key (a key's name beside its prefix); the key itself by default */
  label?: string;
  /** In digits (spendReport's tasksExact). */
  tasks: string;
  money: Money;
  /** the same key's spend in the previous period (undefined: not compared) */
  previous?: string | undefined;
  /** the task list behind this row */
  href?: string | null;
}

export function TopList({
  id,
  title,
  rows,
  empty,
}: {
  id: string;
  title: ComponentChildren;
  rows: Ranked[];
  empty?: string;
}) {
  return (
    <div class="card ranked" data-testid={`top-${id}`}>
      <h2>{title}</h2>
      {rows.length === 0 ? (
        <p class="none">{empty ?? 'nothing in this range'}</p>
      ) : (
        <table>
          <tbody>
            {rows.map((r) => (
              <tr data-key={r.key}>
                <td class="key">{r.href ? <a href={r.href}>{r.label ?? r.key}</a> : (r.label ?? r.key)}</td>
                <td class="num">{plural(r.tasks, 'task')}</td>
                <td class="num" data-amount={r.money.amount} data-unit={r.money.unit}>
                  <Amount amount={r.money.amount} unit={r.money.unit} />
                </td>
                {r.previous !== undefined && (
                  <td
                    class="num change"
                    data-previous={r.previous}
                    title={`previous period: ${money(r.previous, r.money.unit)}`}
                  >
                    {change(r.money.amount, r.previous, r.money.unit)}
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
