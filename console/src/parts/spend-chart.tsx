/**
 * Spend per day for one unit, stacked by model or project. The chart library (uPlot) loads on
 * first use, so it is not part of the first page load. The table under it keeps the exact figures.
 */
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { Money, Unit } from '../api';
import { day, modelLabel } from '../format';
import { Amount } from './amounts';

interface Row {
  keys: string[];
  totals: Money[];
}

export interface Stacked {
  days: string[];
  /** Largest first; the last may be "other". Values are display floats, one per day. */
  series: { name: string; values: number[] }[];
}

const MAX_SERIES = 8;

let chartModule: Promise<typeof import('./chart')> | undefined;
/** The chart library, fetched once. The overview asks for it as it mounts, beside its data. */
export function loadChart(): Promise<typeof import('./chart')> {
  chartModule ??= import('./chart');
  return chartModule;
}

/** Day × key amounts of one unit, keys ordered by their range total (display only: floats). */
export function stack(rows: Row[], unit: Unit, from: Date, days: number): Stacked {
  const dayList = Array.from({ length: days }, (_, i) => day(new Date(from.getTime() + i * 86_400_000)));
  const index = new Map(dayList.map((d, i) => [d, i]));
  const byKey = new Map<string, number[]>();
  for (const row of rows) {
    const amount = row.totals.find((t) => t.unit === unit);
    const i = index.get(row.keys[0]!.slice(0, 10));
    if (!amount || i === undefined) continue;
    const name = modelLabel(row.keys[1]!);
    const values = byKey.get(name) ?? new Array<number>(days).fill(0);
    values[i]! += Number(amount.amount);
    byKey.set(name, values);
  }
  const total = (v: number[]) => v.reduce((a, b) => a + b, 0);
  const ordered = [...byKey.entries()].sort((a, b) => total(b[1]) - total(a[1]) || a[0].localeCompare(b[0]));
  const series = ordered.slice(0, MAX_SERIES).map(([name, values]) => ({ name, values }));
  const rest = ordered.slice(MAX_SERIES);
  if (rest.length)
    series.push({
      name: `${rest.length} others`,
      values: dayList.map((_, i) => rest.reduce((s, [, v]) => s + v[i]!, 0)),
    });
  return { days: dayList, series };
}

/**
 * `pick(day, key)` opens the tasks behind a bar; the table under the chart (folded) holds the exact
 * figures and the same links for the keyboard and screen readers.
 */
export function SpendChart({
  unit,
  from,
  days,
  rows,
  link,
}: {
  unit: Unit;
  from: Date;
  days: number;
  rows: Row[];
  link?: ((day: string, key: string) => string | null) | undefined;
}) {
  const host = useRef<HTMLDivElement>(null);
  const [tableOpen, setTableOpen] = useState(false); // the table is built when first opened, not on every load
  const data = stack(rows, unit, from, days);
  // Drawn before the browser paints (a layout effect; the library is in by then on a reload) and
  // marked on the element itself: no second render and frame just to say so.
  useLayoutEffect(() => {
    let dispose: (() => void) | undefined;
    let live = true;
    void loadChart().then(({ drawStacked }) => {
      if (!live || !host.current) return;
      const onPick = link
        ? (d: string, key: string) => {
            const to = link(d, key);
            if (to) location.hash = to;
          }
        : undefined;
      dispose = drawStacked(host.current, data, unit, onPick);
      host.current.parentElement!.dataset.drawn = 'yes';
    });
    return () => {
      live = false;
      dispose?.();
    };
  }, [JSON.stringify(data), unit]);
  const own = tableOpen ? rows.filter((r) => r.totals.some((t) => t.unit === unit)) : [];
  return (
    <div class="card chart" data-testid={`chart-${unit}`}>
      <h2>Spend per day · {unit === 'USD' ? 'USD' : 'credits'}</h2>
      <div
        ref={host}
        class="plot"
        role="img"
        aria-label={`spend per day in ${unit}, stacked; the table below lists the same figures`}
      />
      <details onToggle={(e) => setTableOpen((e.currentTarget as HTMLDetailsElement).open)}>
        <summary>The figures as a table</summary>
        {tableOpen && (
          <div class="scroll">
            <table data-testid={`chart-table-${unit}`}>
              <thead>
                <tr>
                  <th>Day</th>
                  <th>Series</th>
                  <th class="num">Amount</th>
                </tr>
              </thead>
              <tbody>
                {own.map((r) => {
                  const m = r.totals.find((t) => t.unit === unit)!;
                  const to = link?.(r.keys[0]!.slice(0, 10), r.keys[1]!);
                  return (
                    <tr>
                      <td>{r.keys[0]!.slice(0, 10)}</td>
                      <td>{to ? <a href={to}>{r.keys[1]}</a> : r.keys[1]}</td>
                      <td class="num">
                        <Amount amount={m.amount} unit={unit} />
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
      </details>
    </div>
  );
}
