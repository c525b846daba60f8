/**
 * Counts past GraphQL's Int. The spec's Int is 32 bits; a year's tasks of a busy organisation (68
 * a second) or a vendor's token count for one minute pass it.
 * Such a count is summed by PostgreSQL as bigint (never cast to int: "integer out of range" made the
 * read a 500), carried as a number (exact below 2^53), and answered twice: the Int field capped at
 * INT_MAX, and an `…Exact` String field with its digits (interfaces.md names the Int fields; they
 * are extended, never renamed).
 */

/** The largest GraphQL Int. */
export const INT_MAX = 2 ** 31 - 1;

/** A count for an Int field: itself, or INT_MAX past it. */
export function cappedInt(count: number | string): number {
  return Math.min(Number(count), INT_MAX);
}

/** The description of a capped Int field whose exact digits are in field `exact`. */
export const CAPPED = (exact: string) => `at most ${INT_MAX} (GraphQL's Int): ${exact} gives any count`;
