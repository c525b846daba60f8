/**
 * Exact decimal arithmetic for money. Precision is set far above anything a ledger needs so that
 * no operation here ever rounds; rounding happens only when a figure is displayed or exported.
 */
import { Decimal as DecimalBase } from 'decimal.js';

export const Decimal = DecimalBase.clone({ precision: 60, rounding: DecimalBase.ROUND_HALF_EVEN });
export type Decimal = DecimalBase;
export type DecimalValue = DecimalBase.Value;

/** The two units money is counted in: language models in credits, media in USD. */
export type Unit = 'CREDITS' | 'USD';

/**
 * An exact amount as a query hands it to an edge (a report row, a statement line, an answer):
 * PostgreSQL's numeric text, in its unit. Never a number; `Money.of(unit, amount)` for arithmetic.
 */
export interface AmountText {
  unit: Unit;
  amount: string;
}

export const ZERO = new Decimal(0);
export const MILLION = new Decimal(1_000_000);

/** From a string, an integer count, a Decimal, or a Prisma Decimal (via its exact toString()). */
export function dec(value: DecimalValue | { toString(): string }): Decimal {
  if (value instanceof DecimalBase) return new Decimal(value);
  return new Decimal(typeof value === 'object' ? value.toString() : value);
}

/** An amount in its unit. Credits and USD never mix: arithmetic across units throws, whoever calls it. */
export class Money {
  private constructor(
    readonly unit: Unit,
    readonly amount: Decimal,
  ) {}

  static of(unit: Unit, amount: DecimalValue | { toString(): string }): Money {
    return new Money(unit, dec(amount));
  }

  static zero(unit: Unit): Money {
    return new Money(unit, ZERO);
  }

  /** The total of amounts that must all be in `unit` (an empty list totals zero). */
  static total(unit: Unit, items: Iterable<Money>): Money {
    let total = Money.zero(unit);
    for (const item of items) total = total.plus(item);
    return total;
  }

  plus(other: Money): Money {
    return new Money(this.unit, this.amount.plus(this.same(other).amount));
  }

  minus(other: Money): Money {
    return new Money(this.unit, this.amount.minus(this.same(other).amount));
  }

  /** Scaled by a pure number (a multiplier, a quantity): still in this unit. */
  times(factor: DecimalValue): Money {
    return new Money(this.unit, this.amount.times(factor));
  }

  greaterThan(other: Money): boolean {
    return this.amount.greaterThan(this.same(other).amount);
  }

  isZero(): boolean {
    return this.amount.isZero();
  }

  isNegative(): boolean {
    return this.amount.isNegative();
  }

  /** The exact amount as a plain decimal string (no exponent), for SQL and GraphQL. */
  toFixed(): string {
    return this.amount.toFixed();
  }

  toString(): string {
    return `${this.amount.toFixed()} ${this.unit}`;
  }

  private same(other: Money): Money {
    if (other.unit !== this.unit) throw new MixedUnitsError(this.unit, other.unit);
    return other;
  }
}

export class MixedUnitsError extends Error {
  constructor(a: Unit, b: Unit) {
    super(`credits and USD never mix: ${a} with ${b}`);
  }
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
