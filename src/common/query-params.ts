/** A REST query string's values as Fastify hands them over (a parameter may be repeated). */
import { ApiError } from './api-error.js';
import { calendarDate, notADate } from './dates.js';

export type QueryValue = string | string[] | undefined;

/** The first value of a parameter. */
export const one = (value: QueryValue) => (Array.isArray(value) ? value[0] : value);

/** `a,b` or, for values that hold a comma (an end user may), the parameter repeated: `users=a&users=b`. */
export const list = (value: QueryValue) => {
  if (Array.isArray(value)) return value.length ? value : undefined;
  return value
    ? value
        .split(',')
        .map((v) => v.trim())
        .filter(Boolean)
    : undefined;
};

/** A report's required `from` or `to`: a real calendar date-time, or a 400 naming the field. */
export function reportDate(field: 'from' | 'to', value: QueryValue): Date {
  const text = one(value);
  if (!text) throw ApiError.badRequest(`${field}: is required (a UTC midnight, e.g. 2026-11-01T00:00:00Z)`);
  const at = calendarDate(text);
  if (!at) throw ApiError.badRequest(notADate(field, text));
  return at;
}
