/**
 * The price book: rates as data, versioned. `SPEC_PRICE_ROWS` is version 1, transcribed from the
 * pricing tables of the vendor's documentation; the database holds it and any later version (see
 * price-book.service.ts). Rates are decimal strings, never floats.
 */
import { dec, type Decimal } from './money.js';
import type { ContractTerm } from './contract.js';
import type { TokenClass, Unit } from './pricing.types.js';

export type RateComponent = 'token' | 'second' | 'request' | 'image';

/** One row of a price book version, as stored in the `price_rate` table. */
export interface PriceRow {
  model: string;
  unit: Unit;
  component: RateComponent;
  /** Token class, resolution (seconds, images) or duration in seconds (per-request). */
  key: string;
  rate: string;
  /** Token tiers: name and inclusive upper bound of the request's input tokens (null: no bound). */
  tier?: string;
  tierMaxInput?: number | null;
}

export interface TokenTier {
  name: string;
  maxInputTokens: number | null;
  rates: Partial<Record<TokenClass, Decimal>>;
}

export interface ModelPrice {
  unit: Unit;
  tiers: TokenTier[];
  perSecond: Map<string, Decimal>;
  perRequest: Map<string, Decimal>;
  perImage: Map<string, Decimal>;
}

export interface PriceBook {
  version: number;
  effectiveAt: Date;
  models: Map<string, ModelPrice>;
  /** The contract terms of this version (decisions §19): none means list prices are owed. */
  contract: readonly ContractTerm[];
}

export function buildPriceBook(
  version: number,
  effectiveAt: Date,
  rows: readonly PriceRow[],
  contract: readonly ContractTerm[] = [],
): PriceBook {
  const models = new Map<string, ModelPrice>();
  for (const row of rows) {
    let price = models.get(row.model);
    if (!price) {
      price = { unit: row.unit, tiers: [], perSecond: new Map(), perRequest: new Map(), perImage: new Map() };
      models.set(row.model, price);
    }
    if (price.unit !== row.unit) throw new Error(`price book v${version}: ${row.model} mixes units`);
    const rate = dec(row.rate);
    if (row.component === 'token') {
      const name = row.tier ?? 'standard';
      let tier = price.tiers.find((t) => t.name === name);
      if (!tier) {
        tier = { name, maxInputTokens: row.tierMaxInput ?? null, rates: {} };
        price.tiers.push(tier);
      }
      tier.rates[row.key as TokenClass] = rate;
    } else if (row.component === 'second') price.perSecond.set(row.key, rate);
    else if (row.component === 'request') price.perRequest.set(row.key, rate);
    else price.perImage.set(row.key, rate);
  }
  // Tiers are tried from the lowest bound up; the unbounded tier comes last.
  for (const price of models.values()) {
    price.tiers.sort((a, b) => (a.maxInputTokens ?? Infinity) - (b.maxInputTokens ?? Infinity));
  }
  return { version, effectiveAt, models, contract };
}

// ---- version 1: the spec's tables ---------------------------------------------------------------

/** "272K" means 272,000 tokens (decisions §3). */
export const GPT_LONG_CONTEXT_THRESHOLD = 272_000;

function tokenRows(
  model: string,
  rates: Partial<Record<TokenClass, string>>,
  tier?: { name: string; max: number | null },
): PriceRow[] {
  return Object.entries(rates).flatMap(([key, rate]) =>
    rate === undefined
      ? []
      : [
          {
            model,
            unit: 'CREDITS' as const,
            component: 'token' as const,
            key,
            rate,
            ...(tier ? { tier: tier.name, tierMaxInput: tier.max } : {}),
          },
        ],
  );
}

function claudeRows(model: string, r: [string, string, string, string, string]): PriceRow[] {
  const [input, output, cacheRead, write5m, write1h] = r;
  return tokenRows(model, { input, output, cache_read: cacheRead, cache_write_5m: write5m, cache_write_1h: write1h });
}

function plainRows(model: string, input: string, output: string, cacheRead: string): PriceRow[] {
  return tokenRows(model, { input, output, cache_read: cacheRead });
}

function gptRows(
  model: string,
  base: [string, string, string, string],
  long: [string, string, string, string],
): PriceRow[] {
  const toRates = ([input, output, cacheRead, cacheWrite]: [string, string, string, string]) => ({
    input,
    output,
    cache_read: cacheRead,
    cache_write: cacheWrite,
  });
  return [
    ...tokenRows(model, toRates(base), { name: 'base', max: GPT_LONG_CONTEXT_THRESHOLD }),
    ...tokenRows(model, toRates(long), { name: 'long', max: null }),
  ];
}

function usdRows(model: string, component: RateComponent, rates: Record<string, string>): PriceRow[] {
  return Object.entries(rates).map(([key, rate]) => ({ model, unit: 'USD' as const, component, key, rate }));
}

export const SPEC_PRICE_ROWS: readonly PriceRow[] = [
  ...claudeRows('claude-sonnet-5', ['1528.8', '7644', '152.88', '1911', '3057.6']),
  ...claudeRows('claude-opus-5', ['3822', '19110', '382.2', '4777.5', '7644']),
  ...claudeRows('claude-opus-4-8', ['3822', '19110', '382.2', '4777.5', '7644']),
  ...plainRows('gemini-3.5-flash-lite', '382.2', '3185', '40.04'),
  ...plainRows('gemini-3.8-flash', '955.5', '4914', '109.2'),
  ...plainRows('gemini-3.7-flash', '955.5', '4914', '109.2'),
  ...plainRows('gemini-3.6-flash', '955.5', '4914', '109.2'),
  ...plainRows('glm-5.3', '1400', '4900', '350'),
  ...gptRows('gpt-5.6-luna', ['147.784', '886.704', '14.742', '184.73'], ['295.568', '1330.056', '29.484', '369.46']),
  ...gptRows(
    'gpt-5.6-terra',
    ['1477.84', '8867.04', '147.784', '1847.3'],
    ['2955.68', '13300.56', '295.568', '3694.6'],
  ),
  ...gptRows('gpt-5.6-sol', ['3694.6', '22167.6', '369.46', '4618.25'], ['7389.2', '33251.4', '738.92', '9236.5']),
  ...usdRows('wan2.7-video', 'second', { '720p': '0.120', '1080p': '0.240' }),
  ...usdRows('veo-3.1', 'second', { '720p': '0.360', '1080p': '0.360', '4K': '0.520' }),
  ...usdRows('minimax-h3', 'second', { '768P': '0.090' }),
  ...usdRows('sora-2-pro', 'request', { '10': '0.480', '15': '0.720' }),
  ...usdRows('happyhorse-1.0', 'second', { '720p': '0.176', '1080p': '0.256' }),
  ...usdRows('seedream-4.0', 'image', { '1K': '0.040', '2K': '0.060', '4K': '0.070' }),
  ...usdRows('nano-banana-pro', 'image', { '1K': '0.130', '2K': '0.170', '4K': '0.260' }),
  // seedream-4.5 and seedream-5.0: no published API price (unpriced until an operator publishes one).
];

export const SPEC_PRICE_BOOK_EFFECTIVE_AT = new Date('2026-01-01T00:00:00Z');
