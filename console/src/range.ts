/**
 * A range of whole UTC days, inclusive (from 2026-10-01 to 2026-10-31), as the URL keeps it
 * (?from=…&to=…), and the previous period of the same length that the overview compares with.
 */
import { day, monthStart, utcMidnight } from './format';

export interface DayRange {
  /** first day, YYYY-MM-DD */
  from: string;
  /** last day, inclusive */
  to: string;
  /** UTC midnights: [start, end) as the API takes them */
  start: Date;
  end: Date;
  days: number;
}

const DAY_MS = 86_400_000;
const ISO_DAY = /^\d{4}-\d{2}-\d{2}$/;

export function rangeOf(from: string, to: string): DayRange {
  const start = new Date(`${from}T00:00:00Z`);
  const end = new Date(new Date(`${to}T00:00:00Z`).getTime() + DAY_MS);
  return { from, to, start, end, days: Math.round((end.getTime() - start.getTime()) / DAY_MS) };
}

export const lastDays = (n: number, now = new Date()): DayRange =>
  rangeOf(day(utcMidnight(1 - n, now)), day(utcMidnight(0, now)));
export const wholeMonth = (offset: number, now = new Date()): DayRange =>
  rangeOf(day(monthStart(offset, now)), day(new Date(monthStart(offset + 1, now).getTime() - DAY_MS)));
/** "2026-10" → that month. */
export const monthRange = (month: string): DayRange => wholeMonth(0, new Date(`${month}-01T00:00:00Z`));

/** A real calendar day written YYYY-MM-DD (2026-02-30 is not one). */
export function isDay(d: string | null): d is string {
  return !!d && ISO_DAY.test(d) && !Number.isNaN(Date.parse(`${d}T00:00:00Z`)) && day(`${d}T00:00:00Z`) === d;
}

/** The range in the URL, or the last 30 days when it names none or a wrong one (with why). */
export function rangeFromParams(
  params: URLSearchParams,
  now = new Date(),
): { range: DayRange; problem: string | null } {
  const from = params.get('from');
  const to = params.get('to');
  if (!from && !to) return { range: lastDays(30, now), problem: null };
  if (!isDay(from) || !isDay(to))
    return {
      range: lastDays(30, now),
      problem: 'The address names a range that is not two days (YYYY-MM-DD); showing the last 30 days.',
    };
  if (to < from)
    return { range: lastDays(30, now), problem: 'The range ends before it starts; showing the last 30 days.' };
  const range = rangeOf(from, to);
  if (range.days > 3660)
    return { range: lastDays(30, now), problem: 'A range is at most ten years; showing the last 30 days.' };
  return { range, problem: null };
}

/**
 * The period just before, of the same length: as many whole months for whole months (October → September), else as many
 * days.
 */
export function previousOf(range: DayRange): DayRange {
  const before = new Date(range.start.getTime() - DAY_MS);
  if (isWholeMonths(range)) {
    const months =
      (range.end.getUTCFullYear() - range.start.getUTCFullYear()) * 12 +
      range.end.getUTCMonth() -
      range.start.getUTCMonth();
    return rangeOf(day(monthStart(-months, range.start)), day(before));
  }
  return rangeOf(day(new Date(range.start.getTime() - range.days * DAY_MS)), day(before));
}

/** Whether the range is whole calendar months (user reports are month-aligned). */
export function isWholeMonths(range: DayRange): boolean {
  return range.start.getUTCDate() === 1 && range.end.getUTCDate() === 1;
}

export function rangeLabel(range: DayRange): string {
  if (isWholeMonths(range) && range.days <= 31)
    return range.start.toLocaleString('en', { month: 'long', year: 'numeric', timeZone: 'UTC' });
  return range.from === range.to ? range.from : `${range.from} to ${range.to}`;
}
