/**
 * Dates that enter are real calendar dates (decisions §16): "2026-02-31", "2026-11-31T10:00:00Z"
 * and "T24:00:00Z" are refused, never rolled over to the next month or day as `new Date()` does.
 * ISO 8601 as people and programs write it: a date (midnight UTC), or a date and time with
 * optional seconds and fraction, and a zone (Z or ±HH:MM; none: UTC).
 */
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/;

/**
 * Years 0001–9999 at UTC: PostgreSQL has no year 0, and an offset can carry a written 9999-12-31
 * into year 10000, which every YYYY-MM-DD the code writes would spell +010000.
 */
const FIRST_INSTANT = Date.parse('0001-01-01T00:00:00Z');
const END_INSTANT = Date.parse('+010000-01-01T00:00:00Z');

/** The instant `text` names, or null when it is not a real date (or not ISO 8601, or outside years 0001–9999 UTC). */
export function calendarDate(text: string): Date | null {
  const m = text.length <= 40 ? ISO.exec(text.trim()) : null;
  if (!m) return null;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const [hour, minute, second] = [Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0)];
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  let offsetMinutes = 0;
  const zone = m[8];
  if (zone && zone.toUpperCase() !== 'Z') {
    const z = /^([+-])(\d{2}):?(\d{2})$/.exec(zone)!;
    const [h, min] = [Number(z[2]), Number(z[3])];
    if (h > 23 || min > 59) return null;
    offsetMinutes = (z[1] === '-' ? -1 : 1) * (h * 60 + min);
  }
  const ms = Number(`0.${m[7] ?? '0'}`) * 1000;
  const t = utc(year, month - 1, day, hour, minute, second, Math.floor(ms)) - offsetMinutes * 60_000;
  return Number.isFinite(t) && t >= FIRST_INSTANT && t < END_INSTANT ? new Date(t) : null;
}

export function daysIn(year: number, month: number): number {
  return new Date(utc(year, month, 0)).getUTCDate();
}

/** 400 Gregorian years: the calendar repeats itself exactly. */
const CYCLE_MS = 146_097 * 86_400_000;

/**
 * Date.UTC, but a year 0–99 is that year, not 1900–1999 (Date.UTC's two-digit rule): computed 400
 * years later, where the calendar is the same, and moved back.
 */
function utc(year: number, month: number, ...rest: number[]): number {
  return Date.UTC(year + 400, month, ...rest) - CYCLE_MS;
}

/** The message for a date that is not one, naming the field. */
export function notADate(field: string, text: string): string {
  return `${field}: "${text.slice(0, 40)}" is not a real date-time (ISO 8601 in years 0001–9999 UTC, e.g. 2026-11-30 or 2026-11-30T10:00:00Z)`;
}
