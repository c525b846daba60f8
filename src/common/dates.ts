/**
 * Dates that enter are real calendar dates (decisions §16): "2026-02-31", "2026-11-31T10:00:00Z"
 * and "T24:00:00Z" are refused, never rolled over to the next month or day as `new Date()` does.
 * ISO 8601 as people and programs write it: a date (midnight UTC), or a date and time with
 * optional seconds and fraction, and a zone (Z or ±HH:MM; none: UTC).
 */
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/;

/** The instant `text` names, or null when it is not a real date (or not ISO 8601). */
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
  const t = Date.UTC(year, month - 1, day, hour, minute, second, Math.floor(ms)) - offsetMinutes * 60_000;
  return Number.isFinite(t) ? new Date(t) : null;
}

export function daysIn(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** The message for a date that is not one, naming the field. */
export function notADate(field: string, text: string): string {
  return `${field}: "${text.slice(0, 40)}" is not a real date-time (ISO 8601, e.g. 2026-11-30 or 2026-11-30T10:00:00Z)`;
}
