/**
 * The console's one money rule (console/src/format.ts, docs/console.md "Figures"), exactly: USD
 * with 2 decimals, credits with 2 decimals from 1 up and 3 significant digits below, half away from
 * zero, never a float; "< $0.01" for a non-zero amount that rounds to nothing; the exact figure
 * kept for tooltips; differences and percentages of change computed on decimal strings.
 */
import fc from 'fast-check';
import { Decimal } from '../../src/pricing/money.js';
import { change, exactMoney, money, percentChange, plural, round, subtract } from '../../console/src/format.js';

test('cards, charts and lists: USD with 2 decimals, credits readable, the exact value beside', () => {
  expect(money('0.3', 'USD')).toBe('$0.30');
  expect(money('1234.565', 'USD')).toBe('$1,234.57');
  expect(money('-1234.565', 'USD')).toBe('−$1,234.57'); // the sign before the $ (decisions §9; it read "$−0.04")
  expect(money('-0.04', 'USD')).toBe('−$0.04');
  expect(money('0.004', 'USD')).toBe('< $0.01');
  expect(money('0', 'USD')).toBe('$0.00');
  expect(money('123456.123456789', 'CREDITS')).toBe('123,456.12 credits');
  expect(money('0.000123456', 'CREDITS')).toBe('0.000123 credits');
  expect(money('0.5', 'CREDITS')).toBe('0.500 credits');
  expect(exactMoney('123456.123456789', 'CREDITS')).toBe('123,456.123456789 credits');
  // Exact dollars show at least their cents: padded, never rounded ("$0" beside "$0.00" read as two figures).
  expect(exactMoney('0', 'USD')).toBe('$0.00');
  expect(exactMoney('0.5', 'USD')).toBe('$0.50');
  expect(exactMoney('0.123456', 'USD')).toBe('$0.123456');
  expect(exactMoney('-0.04', 'USD')).toBe('−$0.04');
  expect(plural(1, 'task')).toBe('1 task');
  expect(plural(2, 'task')).toBe('2 tasks');
  expect(plural(1200, 'task')).toBe('1,200 tasks');
});

test('the change against the previous period: a percentage between positive amounts, "new" from nothing, "was …" across a credit', () => {
  expect(change('1.5', '1', 'USD')).toBe('+50.0 %');
  expect(change('1', '0', 'USD')).toBe('new');
  expect(change('-0.04', '1.25', 'USD')).toBe('was $1.25'); // not "−103.2 %"
  expect(change('1.25', '-0.04', 'USD')).toBe('was −$0.04');
});

test('rounding is exact and half away from zero, for any decimal (fast-check against decimal.js)', () => {
  const decimal = fc
    .tuple(fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }), fc.integer({ min: 0, max: 12 }))
    .map(([v, scale]) => new Decimal(v.toString()).div(new Decimal(10).pow(scale)).toFixed(scale));
  fc.assert(
    fc.property(decimal, fc.integer({ min: 0, max: 6 }), (amount, places) => {
      expect(round(amount, places)).toBe(
        new Decimal(amount)
          .toDecimalPlaces(places, Decimal.ROUND_HALF_UP)
          .toFixed(places)
          .replace(/^-(0\.?0*)$/, '$1'),
      );
    }),
    { numRuns: 2000 },
  );
  fc.assert(
    fc.property(decimal, decimal, (a, b) => {
      expect(new Decimal(subtract(a, b)).equals(new Decimal(a).minus(b))).toBe(true);
    }),
    { numRuns: 2000 },
  );
});

test('the change against the previous period: one decimal, signed, none when there was nothing before', () => {
  expect(percentChange('112.5', '100')).toBe('+12.5 %');
  expect(percentChange('87.55', '100')).toBe('−12.5 %');
  expect(percentChange('100', '100')).toBe('±0.0 %');
  expect(percentChange('5', '0')).toBeNull();
  expect(percentChange('1', '3')).toBe('−66.7 %');
});
