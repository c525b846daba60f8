/**
 * The Decimal scalar: exact decimals serialized as strings ("144.0894"), never floats. An argument
 * arrives in the resolver as its checked text (DecimalText), which the resolver turns into a
 * decimal with dec(): graphql-jit embeds an inline literal's parsed value in the compiled query
 * as JSON, so a parsed decimal.js object would reach the resolver as a string on the compiled
 * runs (and in exponent form below 1e-7); text survives that unchanged.
 */
import { graphqlRefusal } from '../common/error.filter.js';
import { Scalar, type CustomScalar } from '@nestjs/graphql';
import { GraphQLScalarType, Kind, type ValueNode } from 'graphql';
import { calendarDate, notADate } from '../common/dates.js';
import { Decimal as DecimalJs } from 'decimal.js';
import { amountProblem } from '../pricing/bounds.js';

/**
 * Whether text is a decimal as Decimal fields write it: /^-?\d+(\.\d+)?$/, checked by hand (a
 * 9,000-group report serializes 72,000 of them: 1.4 against 2.4-3.8 ms with the expression;
 * test/reports/json-writer.test.ts holds the two equal).
 */
export function isDecimalText(text: string): boolean {
  const n = text.length;
  const first = text.charCodeAt(0) === 45 ? 1 : 0; // '-'
  let dot = -1;
  for (let i = first; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 46) {
      if (dot !== -1 || i === first) return false; // '.': once, after a digit
      dot = i;
    } else if (c < 48 || c > 57) return false; // '0'-'9'
  }
  return n > first && dot !== n - 1;
}

/**
 * One way to write an exact decimal in every answer (decisions §9: a dashboard said "0.60"
 * where budgetStatus said "0.6"): no trailing zeros after the point, as decimal.js writes it.
 * PostgreSQL keeps a sum's scale ("0.04" + "0.56" = "0.60"); the value is the same.
 */
export function canonicalDecimal(text: string): string {
  let end = text.length;
  if (text.charCodeAt(end - 1) !== 48) return text; // no trailing '0': most amounts, at the cost of one look
  const dot = text.lastIndexOf('.');
  if (dot < 0) return text === '-0' ? '0' : text; // "100"
  while (text.charCodeAt(end - 1) === 48) end--;
  if (end - 1 === dot) end--; // "12." → "12"
  const out = text.slice(0, end);
  return out === '-0' ? '0' : out;
}

export class DecimalValue {}

/** A Decimal argument as the resolver receives it: bounded decimal text such as "12.50". */
export type DecimalText = string;

@Scalar('Decimal', () => DecimalValue)
export class DecimalScalar implements CustomScalar<string, DecimalText> {
  description = 'Exact decimal number, serialized as a string such as "144.0894"';

  parseValue(value: unknown): DecimalText {
    return parse(value);
  }

  serialize(value: unknown): string {
    if (value instanceof DecimalJs) return value.toFixed();
    if (typeof value === 'string' && isDecimalText(value)) return canonicalDecimal(value);
    throw new TypeError('Decimal fields are exact: serialize a decimal.js value or a decimal string');
  }

  parseLiteral(ast: ValueNode): DecimalText {
    // Only string literals: a JSON/GraphQL float literal would already have lost exactness.
    if (ast.kind === Kind.STRING) return parse(ast.value);
    if (ast.kind === Kind.INT) return parse(ast.value);
    throw graphqlRefusal('Decimal values are written as strings, e.g. "12.50"', 'BAD_USER_INPUT');
  }
}

/**
 * Every Decimal a client sends is an amount an operator typed: bounded (pricing/bounds.ts), so a
 * 140,000-digit or 60-decimal "amount" is refused as bad input, never computed with.
 */
function parse(value: unknown): DecimalText {
  if (typeof value !== 'string')
    throw graphqlRefusal(
      `"${String(value).slice(0, 40)}" is not a decimal; write it as a string, e.g. "12.50"`,
      'BAD_USER_INPUT',
    );
  const text = value.trim();
  const problem = amountProblem(text);
  if (problem) throw graphqlRefusal(problem.startsWith('"') ? problem : `a Decimal ${problem}`, 'BAD_USER_INPUT');
  return text;
}

/**
 * DateTime, as @nestjs/graphql's GraphQLISODateTime but strict: an impossible date
 * ("2026-11-31T10:00:00Z", "T24:00:00Z") is a 400 naming it, never rolled over (decisions §16).
 */
export const DateTimeScalar = new GraphQLScalarType<Date | null, string | null>({
  name: 'DateTime',
  description: 'A date-time string at UTC, such as 2019-12-03T09:54:33Z, compliant with the date-time format.',
  parseValue(value) {
    return strictDate(value);
  },
  serialize(value) {
    return value instanceof Date ? value.toISOString() : null;
  },
  parseLiteral(ast) {
    return ast.kind === Kind.STRING ? strictDate(ast.value) : null;
  },
});

function strictDate(value: unknown): Date {
  const date = typeof value === 'string' ? calendarDate(value) : null;
  if (!date)
    throw graphqlRefusal(
      notADate('DateTime', typeof value === 'string' ? value : String(value)).replace(/^DateTime: /, ''),
      'BAD_USER_INPUT',
    );
  return date;
}
