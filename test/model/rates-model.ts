/**
 * The credit price and FX rates in the money model (decisions §19): each published for a first month
 * and versioned; a month converts at the version of the latest month on or before it (the last one
 * published for that month). A converted figure is exact, null while a rate it needs is missing, and
 * names the versions it used.
 */
import { Decimal } from 'decimal.js';
import type { Month, Unit } from './catalog-model.js';

/** The credit price (USD a credit), or an FX rate (units of the currency per USD). */
export type FxCurrency = 'EUR' | 'JPY';
export type RateSeries = 'CREDIT' | FxCurrency;
export type Currency = 'USD' | FxCurrency;
/** Every currency a converted figure is read in: two FX series, so one never answers for the other. */
export const CURRENCIES: readonly Currency[] = ['USD', 'EUR', 'JPY'];

interface Version {
  version: number;
  rate: Decimal;
}

export interface Converted {
  amount: Decimal | null;
  creditPriceVersions: number[];
  fxRateVersions: number[];
}

export class RatesModel {
  private readonly series = new Map<RateSeries, Map<Month, Version>>([
    ['CREDIT', new Map()],
    ['EUR', new Map()],
    ['JPY', new Map()],
  ]);

  /** A publication the product numbered `version`: it supersedes any earlier one for the same month. */
  publish(series: RateSeries, month: Month, version: number, rate: string): void {
    const versions = this.series.get(series)!;
    // Each series numbers its versions upward: a number not above the last would name two rates.
    if ([...versions.values()].some((v) => v.version >= version))
      throw new Error(`${series} ${month}: version ${version} is not above the versions before it`);
    versions.set(month, { version, rate: new Decimal(rate) });
  }

  inForce(series: RateSeries, month: Month): Version | undefined {
    const months = [...this.series.get(series)!.keys()].filter((m) => m <= month).sort();
    return months.length ? this.series.get(series)!.get(months.at(-1)!) : undefined;
  }

  /** A month's totals per unit in `currency`: each unit converted alone, then summed. */
  convert(totals: ReadonlyMap<Unit, Decimal>, month: Month, currency: Currency): Converted {
    const credit = this.inForce('CREDIT', month);
    const fx = currency === 'USD' ? undefined : this.inForce(currency, month);
    // At a rate, or none: an amount of 0 needs no rate, any other is not converted.
    const at = (rate: Version | undefined, x: Decimal | null) =>
      x === null ? null : rate ? x.times(rate.rate) : x.isZero() ? x : null;
    let amount: Decimal | null = new Decimal(0);
    for (const [unit, total] of totals) {
      const usd = unit === 'CREDITS' ? at(credit, total) : total;
      const converted = currency === 'USD' ? usd : at(fx, usd);
      amount = amount && converted ? amount.plus(converted) : null;
    }
    return {
      amount,
      creditPriceVersions: credit ? [credit.version] : [],
      fxRateVersions: fx ? [fx.version] : [],
    };
  }
}
