/**
 * How the console shows amounts (docs/console.md, "Figures"). The API sends decimals as strings;
 * nothing here adds amounts across units, and nothing uses floats (chart geometry only, chart.ts).
 *
 * One rule for every page:
 * - cards, charts, lists: USD with 2 decimals ("$1,234.57"), credits with 2 decimals from 1 up and
 *   3 significant digits below 1 ("0.00123 credits"), rounded half away from zero; a non-zero
 *   amount that rounds to nothing reads "< $0.01";
 * - the task detail, statements and every figure's tooltip (title): the exact decimal, every digit.
 */
/** The two units an amount comes in (never summed together). */
export type Unit = 'USD' | 'CREDITS';

export const UNITS: Unit[] = ['USD', 'CREDITS'];

/** The reports' "model" of adjustments (posted apart from any task's model), and how it reads. */
export const ADJUSTMENT = '(adjustment)';
export const ADJUSTMENT_LABEL = 'adjustments (not a model)';
export const modelLabel = (model: string): string => (model === ADJUSTMENT ? ADJUSTMENT_LABEL : model);

/** A budget on part of the catalog (decisions §20), as every page names it: "seedream-4.0 only", "video tasks only". */
export const catalogPart = (modelScope: string | null, modelValue: string | null): string =>
  modelScope ? `${modelScope === 'KIND' ? `${modelValue} tasks` : modelValue} only` : '';

export function groupDigits(amount: string): string {
  const negative = amount.startsWith('-');
  const [whole = '0', fraction] = (negative ? amount.slice(1) : amount).split('.');
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${negative ? '−' : ''}${grouped}${fraction ? `.${fraction}` : ''}`;
}

/**
 * The exact amount, every digit, grouped: for detail pages and tooltips. Dollars show at least
 * their cents ("$0.00", "$0.5" as "$0.50": padding, never rounding) and the sign before the $
 * ("−$0.04").
 */
export function exactMoney(amount: string, unit: Unit): string {
  if (unit !== 'USD') return `${groupDigits(amount)} credits`;
  const negative = amount.startsWith('-');
  const [whole = '0', fraction = ''] = (negative ? amount.slice(1) : amount).split('.');
  const text = groupDigits(`${whole}.${fraction.padEnd(2, '0')}`);
  return `${negative && /[1-9]/.test(amount) ? '−' : ''}$${text}`;
}

/** "1 task", "2 tasks": a count and its noun; a count in digits (a `…Exact` field) is shown exactly at any size. */
export function plural(count: number | string, noun: string, many = `${noun}s`): string {
  const n = typeof count === 'string' ? BigInt(count) : count;
  return `${n.toLocaleString('en-US')} ${n === 1 || n === 1n ? noun : many}`;
}

/** "a" or "an" before a word ("an image route"). */
export function article(word: string): string {
  return /^[aeiou]/i.test(word) ? 'an' : 'a';
}

/** A decimal string as a scaled integer: 12.345 → [12345n, 3]. */
function scaled(amount: string): [bigint, number] {
  const negative = amount.startsWith('-');
  const [whole = '0', fraction = ''] = (negative ? amount.slice(1) : amount).split('.');
  const value = BigInt(`${whole || '0'}${fraction}`);
  return [negative ? -value : value, fraction.length];
}

function unscaled(value: bigint, scale: number): string {
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString().padStart(scale + 1, '0');
  const text = scale ? `${digits.slice(0, -scale)}.${digits.slice(-scale)}` : digits;
  return negative ? `-${text}` : text;
}

/** Rounded half away from zero to `decimals` places, exactly. */
export function round(amount: string, decimals: number): string {
  const [value, scale] = scaled(amount);
  if (scale <= decimals) return unscaled(value * 10n ** BigInt(decimals - scale), decimals);
  const divisor = 10n ** BigInt(scale - decimals);
  const magnitude = value < 0n ? -value : value;
  const rounded = (magnitude + divisor / 2n) / divisor;
  return unscaled(value < 0n ? -rounded : rounded, decimals);
}

/** a − b, exactly. */
export function subtract(a: string, b: string): string {
  const [x, xs] = scaled(a);
  const [y, ys] = scaled(b);
  const scale = Math.max(xs, ys);
  const diff = x * 10n ** BigInt(scale - xs) - y * 10n ** BigInt(scale - ys);
  return unscaled(diff, scale)
    .replace(/(\.\d*?)0+$/, '$1')
    .replace(/\.$/, '');
}

/** (now − before) / before as a percentage with one decimal ("+12.5 %"); null when before is zero. */
export function percentChange(now: string, before: string): string | null {
  const [b, bs] = scaled(before);
  if (b === 0n) return null;
  const [n, ns] = scaled(now);
  const scale = Math.max(bs, ns);
  const nn = n * 10n ** BigInt(scale - ns);
  const bb = b * 10n ** BigInt(scale - bs);
  const tenths = ((nn - bb) * 2000n) / (bb < 0n ? -bb : bb); // twentieths of a percent, for rounding
  const rounded = (tenths + (tenths < 0n ? -1n : 1n)) / 2n;
  const text = unscaled(rounded, 1);
  return `${rounded > 0n ? '+' : rounded < 0n ? '−' : '±'}${text.replace('-', '')} %`;
}

/**
 * The change against the previous period: a percentage between two positive amounts; "new" when
 * there was none; "was …" when either is a credit (negative), where a percentage means nothing
 * ("−103.2 %" from 1.25 to −0.04).
 */
export function change(now: string, before: string, unit: Unit): string {
  if (/^-?0*(\.0*)?$/.test(before)) return 'new';
  if (before.startsWith('-') || now.startsWith('-')) return `was ${money(before, unit)}`;
  return percentChange(now, before) ?? 'new';
}

/** Decimals shown for an amount: 2, or 3 significant digits for credits below 1. */
function decimalsFor(amount: string, unit: Unit): number {
  if (unit === 'USD') return 2;
  const [whole = '0', fraction = ''] = amount.replace('-', '').split('.');
  if (/[1-9]/.test(whole)) return 2;
  const leadingZeros = fraction.search(/[1-9]/);
  return leadingZeros < 0 ? 2 : Math.min(leadingZeros + 3, 12);
}

/** The readable figure (the rule above); the exact one belongs in a tooltip beside it. */
export function money(amount: string, unit: Unit): string {
  const shown = round(amount, decimalsFor(amount, unit));
  if (/^-?0(\.0*)?$/.test(shown) && /[1-9]/.test(amount)) {
    const sign = amount.startsWith('-') ? '−' : '';
    return unit === 'USD' ? `${sign}< $0.01` : `${sign}< 0.01 credits`;
  }
  return exactMoney(shown, unit);
}

/**
 * A figure in a reporting currency (decisions §19), to two places, rounded exactly as `money`
 * rounds (half away from zero on the decimal text): a conversion can carry 18 places, more than a
 * float holds (1.004999999999999999 is 1.00; as a float it was shown 1.01).
 */
export function currencyAmount(amount: string): string {
  const shown = round(amount, 2);
  if (/^-?0\.00$/.test(shown) && /[1-9]/.test(amount)) return `${amount.startsWith('-') ? '−' : ''}< 0.01`;
  return groupDigits(shown);
}

/** A UTC day as YYYY-MM-DD. */
export function day(date: Date | string): string {
  return (typeof date === 'string' ? new Date(date) : date).toISOString().slice(0, 10);
}

export function dateTime(value: string | null | undefined): string {
  if (!value) return '—';
  return value.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC');
}

export function utcMidnight(offsetDays = 0, from = new Date()): Date {
  return new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth(), from.getUTCDate() + offsetDays));
}

export function monthStart(offsetMonths = 0, from = new Date()): Date {
  return new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + offsetMonths, 1));
}
