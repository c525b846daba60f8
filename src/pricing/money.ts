/**
 * Exact decimal arithmetic for money. Precision is set far above anything a ledger needs so that
 * no operation here ever rounds; rounding happens only when a figure is displayed or exported.
 */
import { Decimal as DecimalBase } from 'decimal.js';

export const Decimal = DecimalBase.clone({ precision: 60, rounding: DecimalBase.ROUND_HALF_EVEN });
export type Decimal = DecimalBase;
export type DecimalValue = DecimalBase.Value;

export const ZERO = new Decimal(0);
export const MILLION = new Decimal(1_000_000);

/** From a string, an integer count, a Decimal, or a Prisma Decimal (via its exact toString()). */
export function dec(value: DecimalValue | { toString(): string }): Decimal {
  if (value instanceof DecimalBase) return new Decimal(value);
  return new Decimal(typeof value === 'object' ? value.toString() : value);
}

export function sum(values: Iterable<Decimal>): Decimal {
  let total = ZERO;
  for (const value of values) total = total.plus(value);
  return total;
}

/** Display rounding only: half-even to `places`, as a plain string (no exponent). */
export function display(value: Decimal, places: number): string {
  return value.toDecimalPlaces(places, DecimalBase.ROUND_HALF_EVEN).toFixed(places);
}

/** Canonical exact string: no exponent, no trailing zeros. */
export function exact(value: Decimal): string {
  return value.toFixed();
}

/** used / limit × 100 for display: half-even to 2 places; 0.00 for a zero limit. */
export function percent(used: Decimal, limit: Decimal): string {
  return limit.isZero() ? '0.00' : display(used.times(100).dividedBy(limit), 2);
}
