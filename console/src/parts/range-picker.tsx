/**
 * The range of whole UTC days a page shows, kept in the URL (?from=&to=): presets, a whole month in
 * one choice, or any from–to. Every control is a labelled native input (keyboard and screen readers).
 */
import { setParams } from '../route';
import { isWholeMonths, lastDays, monthRange, wholeMonth, type DayRange } from '../range';

const PRESETS: Array<[string, () => DayRange]> = [
  ['last 7 days', () => lastDays(7)],
  ['last 30 days', () => lastDays(30)],
  ['last 90 days', () => lastDays(90)],
  ['this month', () => wholeMonth(0)],
  ['last month', () => wholeMonth(-1)],
];

const pick = (range: DayRange) => setParams({ from: range.from, to: range.to });

export function RangePicker({ range }: { range: DayRange }) {
  const preset = PRESETS.find(([, make]) => {
    const r = make();
    return r.from === range.from && r.to === range.to;
  })?.[0];
  return (
    <fieldset class="range" data-testid="range">
      <legend class="visually-hidden">Date range (UTC, whole days)</legend>
      <label>
        Range{' '}
        <select
          name="preset"
          value={preset ?? ''}
          onChange={(e) => pick(PRESETS.find(([n]) => n === (e.target as HTMLSelectElement).value)![1]())}
        >
          {!preset && <option value="">custom</option>}
          {PRESETS.map(([name]) => (
            <option value={name}>{name}</option>
          ))}
        </select>
      </label>
      <label>
        Month{' '}
        <input
          type="month"
          name="month"
          value={isWholeMonths(range) && range.days <= 31 ? range.from.slice(0, 7) : ''}
          onChange={(e) =>
            (e.target as HTMLInputElement).value && pick(monthRange((e.target as HTMLInputElement).value))
          }
        />
      </label>
      <label>
        From{' '}
        <input
          type="date"
          name="from"
          value={range.from}
          max={range.to}
          onChange={(e) =>
            (e.target as HTMLInputElement).value &&
            setParams({ from: (e.target as HTMLInputElement).value, to: range.to })
          }
        />
      </label>
      <label>
        to (included){' '}
        <input
          type="date"
          name="to"
          value={range.to}
          min={range.from}
          onChange={(e) =>
            (e.target as HTMLInputElement).value &&
            setParams({ from: range.from, to: (e.target as HTMLInputElement).value })
          }
        />
      </label>
    </fieldset>
  );
}
