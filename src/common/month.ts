/** A UTC calendar month named "YYYY-MM" (decisions §13, §19): its first instant and the next month's. */
import { ApiError } from './api-error.js';

export interface Month {
  /** "2026-10" */
  label: string;
  /** 2026-10-01T00:00:00Z */
  start: Date;
  /** 2026-11-01T00:00:00Z */
  end: Date;
  /** "2026-10-01", as the database's date columns hold it */
  day: string;
}

export function parseMonth(field: string, text: string): Month {
  const match = /^(\d{4})-(0[1-9]|1[0-2])$/.exec(text);
  if (!match) throw ApiError.badRequest(`${field}: a month as YYYY-MM, e.g. 2026-10`);
  const year = Number(match[1]);
  const month = Number(match[2]) - 1;
  if (year < 2000 || year > 9998) throw ApiError.badRequest(`${field}: a year between 2000 and 9998`);
  return monthOf(new Date(Date.UTC(year, month, 1)));
}

export function monthOf(at: Date): Month {
  const start = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
  const end = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1));
  const label = start.toISOString().slice(0, 7);
  return { label, start, end, day: `${label}-01` };
}
