/**
 * Bounds on what people send as amounts and dates (decisions §4, §5): an amount an operator types (a
 * budget's limit, an adjustment, a resolution, a rate, a multiplier) has at most
 * MAX_INTEGER_DIGITS digits before the point and MAX_DECIMALS after, and a date lies within the
 * ledger's epoch. Anything else is a clear 400 naming the field, before it reaches a query.
 *
 * Why these numbers: 10^12 of either unit is far past any real budget or bill, and 18 decimals
 * hold every exact charge the price book can produce (a rate of up to 12 decimals per million
 * tokens); a 60-decimal or 10^21 amount is a typo or an attack, never a figure.
 */
import { ApiError } from '../common/api-error.js';
import { dec, type Decimal } from './money.js';

export const MAX_INTEGER_DIGITS = 12;
export const MAX_DECIMALS = 18;
/** The ledger's epoch: where a LIFETIME budget's window and reconcile start (the database checks it too). */
export const LEDGER_EPOCH = new Date('1970-01-01T00:00:00Z');

const DECIMAL = /^(-)?(\d+)(?:\.(\d+))?$/;

/** Why `text` is not an amount within bounds, or undefined when it is one. */
export function amountProblem(text: string, { negative = true } = {}): string | undefined {
  // longer is never an amount (and the regex needs no more)
  const match = text.length <= 256 ? DECIMAL.exec(text) : null;
  if (!match) return `"${clipped(text)}" is not a decimal; write it as a string, e.g. "12.50"`;
  if (match[1] && !negative) return 'must not be negative';
  const whole = match[2]!.replace(/^0+(?=\d)/, '');
  if (whole.length > MAX_INTEGER_DIGITS)
    return `must be below 10^${MAX_INTEGER_DIGITS} (at most ${MAX_INTEGER_DIGITS} digits before the point)`;
  if ((match[3]?.length ?? 0) > MAX_DECIMALS) return `has more than ${MAX_DECIMALS} decimals`;
  return undefined;
}

/** A bounded decimal amount from text, or a 400 naming the field. */
export function boundedAmount(field: string, text: string, options: { negative?: boolean } = {}): Decimal {
  const trimmed = text.trim();
  const problem = amountProblem(trimmed, options);
  if (problem) throw ApiError.badRequest(`${field}: ${problem}`);
  return dec(trimmed);
}

/** A date within [earliest, latest], or a 400 naming the field and the bounds. */
export function dateWithin(field: string, value: Date, earliest: Date, latest: Date): Date {
  if (Number.isNaN(value.getTime())) throw ApiError.badRequest(`${field}: must be a date-time`);
  if (value < earliest || value > latest) {
    throw ApiError.badRequest(
      `${field}: ${value.toISOString()} is outside ${earliest.toISOString()} to ${latest.toISOString()}`,
    );
  }
  return value;
}

function clipped(text: string): string {
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}
