/**
 * Converted totals (decisions §19), plain TypeScript: credits to USD at finance's credit price, USD to
 * a reporting currency at finance's FX rate, each versioned by month. A month converts at the
 * version in force for it: the one for the latest month on or before it, the highest version of that
 * month (a correction re-published for a month supersedes). Converted figures are a reading aid,
 * always labelled and naming their versions; the exact per-unit figures stay what the books hold.
 */
import { ZERO, type Decimal, type Unit } from '../pricing/money.js';

export interface RateVersion {
  version: number;
  /** The first month it applies to, `YYYY-MM`. */
  month: string;
  rate: Decimal;
}

/** A stretch of a report's range in which the same versions apply. */
export interface Span {
  from: Date;
  to: Date;
  credit?: RateVersion;
  fx?: RateVersion;
}

export const monthOf = (d: Date) => d.toISOString().slice(0, 7);

/** The version in force for `month`, or none yet. */
export function inForce(versions: readonly RateVersion[], month: string): RateVersion | undefined {
  let best: RateVersion | undefined;
  for (const v of versions) {
    if (v.month > month) continue;
    if (!best || v.month > best.month || (v.month === best.month && v.version > best.version)) best = v;
  }
  return best;
}

/** `[from, to)` cut at the month starts where the versions in force change (usually one span). */
export function spans(from: Date, to: Date, credit: readonly RateVersion[], fx: readonly RateVersion[] | null): Span[] {
  const out: Span[] = [];
  let start = from;
  while (start < to) {
    const next = new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1));
    const end = next < to ? next : to;
    const c = inForce(credit, monthOf(start));
    const f = fx ? inForce(fx, monthOf(start)) : undefined;
    const last = out.at(-1);
    if (last && last.credit?.version === c?.version && last.fx?.version === f?.version) last.to = end;
    else out.push({ from: start, to: end, ...(c ? { credit: c } : {}), ...(f ? { fx: f } : {}) });
    start = end;
  }
  return out;
}

/** An exact amount of `unit` in the reporting currency over a span, or null when a rate is missing. */
export function convert(amount: Decimal, unit: Unit, span: Span, currency: string): Decimal | null {
  let usd = amount;
  if (unit === 'CREDITS') {
    if (!span.credit) return amount.isZero() ? ZERO : null;
    usd = amount.times(span.credit.rate);
  }
  if (currency === 'USD') return usd;
  if (!span.fx) return usd.isZero() ? ZERO : null;
  return usd.times(span.fx.rate);
}

/** What is missing for a span's rows to convert, in words (empty when nothing is). */
export function missingRates(span: Span, units: ReadonlySet<Unit>, currency: string): string[] {
  const month = monthOf(span.from);
  const out: string[] = [];
  if (units.has('CREDITS') && !span.credit) out.push(`no credit price for ${month}: credits not converted`);
  if (currency !== 'USD' && !span.fx && units.size > 0) out.push(`no ${currency} rate for ${month}: not converted`);
  return out;
}

/** The label every converted figure carries: converted, at which versions. */
export function conversionLabel(currency: string, used: readonly Span[]): string {
  const credit = [...new Map(used.flatMap((s) => (s.credit ? [[s.credit.version, s.credit]] : []))).values()];
  const fx = [...new Map(used.flatMap((s) => (s.fx ? [[s.fx.version, s.fx]] : []))).values()];
  const parts = [
    ...credit.map((v) => `credit price v${v.version} (${v.rate.toFixed()} USD a credit, from ${v.month})`),
    ...fx.map((v) => `${currency} v${v.version} (${v.rate.toFixed()} per USD, from ${v.month})`),
  ];
  return `converted to ${currency}${parts.length ? ` at ${parts.join(', ')}` : ''}; the exact figures per unit are the books`;
}
