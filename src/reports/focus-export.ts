/**
 * Spend as FOCUS 1.2 (the FinOps Open Cost and Usage Specification), for finance tools:
 * GET /reports/focus.csv and `spendgate report --format focus`.
 *
 * Grain (focus-grain.ts): one row per charge period (a UTC day) × project (SubAccount) × API key ×
 * model × price-book version × SKU price (a charge line component at one rate, e.g. gpt-5.6-luna
 * input tokens at the long-context tier), from roll-ups, never raw tasks. Costs:
 * - USD rows: BilledCost = ContractedCost = the exact amount owed (under the contract of the
 *   task's price-book version, decisions §19), ContractedUnitPrice its rate; ListCost the same
 *   usage at the price book's list rate, ListUnitPrice. PricingQuantity × either unit price is
 *   its cost, exactly. EffectiveCost spreads a commitment's true-up over its month's usage
 *   (focus-effective.ts).
 * - Credit rows (decisions §7, §19): the credits in x_Credits; a FOCUS cost at finance's credit price
 *   in force for the row's month (credits × price, its version in x_CostStatus, the price in
 *   x_UsdPerCredit), as convertedSpend converts them; for a month without one, at CREDITS_PER_USD
 *   if the operator set it (credits ÷ rate, the rate in x_CreditsPerUsd); 10 places half-even, unit
 *   prices too. Without either the cost columns are 0 (FOCUS does not allow them empty) and
 *   x_CostStatus says so.
 * - Adjustments without a task are ChargeCategory Adjustment. What a model's totals hold beyond
 *   its lines (a refund, a review's resolution) has no unit price: a row of its own, Credit when
 *   negative, else Adjustment, without SKU or quantities. ChargeClass stays null: spendgate posts
 *   corrections in the period they count in, never into an invoiced one.
 */
import { csvLine } from '../common/csv.js';
import type { Database } from '../database/database.js';
import { dec, Decimal, type Decimal as DecimalValue } from '../pricing/money.js';
import { inForce, monthOf, type RateVersion } from '../rates/conversion.js';
import { rateVersions } from '../rates/rate-versions.js';
import { effectiveDeltas } from './focus-effective.js';
import { focusGrain, type GrainRow, type GroupRow, type SkuRow } from './focus-grain.js';

export const FOCUS_COLUMNS = [
  'BilledCost',
  'BillingAccountId',
  'BillingAccountName',
  'BillingCurrency',
  'BillingPeriodEnd',
  'BillingPeriodStart',
  'ChargeCategory',
  'ChargeClass',
  'ChargeDescription',
  'ChargeFrequency',
  'ChargePeriodEnd',
  'ChargePeriodStart',
  'ConsumedQuantity',
  'ConsumedUnit',
  'ContractedCost',
  'ContractedUnitPrice',
  'EffectiveCost',
  'InvoiceIssuerName',
  'ListCost',
  'ListUnitPrice',
  'PricingQuantity',
  'PricingUnit',
  'ProviderName',
  'PublisherName',
  'ServiceCategory',
  'ServiceName',
  'SkuId',
  'SkuPriceId',
  'SubAccountId',
  'SubAccountName',
  'Tags',
  'x_ApiKeyPrefix',
  'x_Unit',
  'x_Credits',
  'x_CreditsPerUsd',
  'x_CostStatus',
  'x_Tasks',
  'x_UnpricedTasks',
  'x_InputTokens',
  'x_OutputTokens',
  'x_CacheReadTokens',
  'x_CacheWriteTokens',
  'x_VideoSeconds',
  'x_Images',
  'x_PriceBookVersion',
  'x_UsdPerCredit',
] as const;

export interface FocusOptions {
  from: Date;
  to: Date;
  projectIds?: string[];
  /** Credits per USD (CREDITS_PER_USD): the cost of credit rows in months without a credit price. */
  creditsPerUsd?: DecimalValue;
  /** Who bills (ProviderName, InvoiceIssuerName): the vendor in front of which spendgate runs. */
  vendorName: string;
}

const COST_PLACES = 10;

export async function focusRows(db: Pick<Database, 'query'>, o: FocusOptions): Promise<string[][]> {
  const rows = await focusGrain(db, o.from, o.to, o.projectIds);
  const deltas = await effectiveDeltas(db, o.from, o.to);
  const prices = await rateVersions(db, null);
  return rows.map((r) => focusRecord(r, o, deltas.get(r.key), prices));
}

export async function focusCsv(db: Pick<Database, 'query'>, o: FocusOptions): Promise<string> {
  const rows = await focusRows(db, o);
  return [csvLine([...FOCUS_COLUMNS]), ...rows.map((r) => csvLine(r))].join('\n') + '\n';
}

function focusRecord(
  row: GrainRow,
  o: FocusOptions,
  effectiveDelta: DecimalValue | undefined,
  creditPrices: readonly RateVersion[],
): string[] {
  const { group: r, sku } = row;
  const start = r.day;
  const end = new Date(start.getTime() + 86_400_000);
  const monthStart = new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), 1));
  const monthEnd = new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1));
  const credits = r.unit === 'CREDITS';
  const price = credits ? inForce(creditPrices, monthOf(start)) : undefined;
  const perUsd = credits && !price ? o.creditsPerUsd : undefined;
  const costOf = (amount: DecimalValue) =>
    !credits
      ? amount.toFixed()
      : price || perUsd
        ? (price ? amount.times(price.rate) : amount.dividedBy(perUsd!))
            .toDecimalPlaces(COST_PLACES, Decimal.ROUND_HALF_EVEN)
            .toFixed()
        : '0';
  const cost = costOf(dec(row.amount));
  const listCost = costOf(dec(row.listAmount));
  const effectiveCost = effectiveDelta ? costOf(dec(row.amount).plus(effectiveDelta)) : cost;
  const status = !credits
    ? 'exact'
    : price
      ? `converted at credit price v${price.version} (${price.rate.toFixed()} USD a credit, from ${price.month}), ${COST_PLACES} places half-even`
      : perUsd
        ? `converted at ${perUsd.toFixed()} credits per USD, ${COST_PLACES} places half-even`
        : 'credits not converted: set a credit price (setCreditPrice) or CREDITS_PER_USD for a cost';
  const priced = sku ? skuColumns(r.model, r.version, sku, costOf) : NO_SKU;
  const counts = sku ? countsOf(sku) : r;
  const key = r.key_prefix || 'no key';
  return [
    cost,
    'spendgate',
    'spendgate',
    'USD',
    iso(monthEnd),
    iso(monthStart),
    row.kind === 'usage' ? 'Usage' : row.kind === 'unrated' && dec(row.amount).isNegative() ? 'Credit' : 'Adjustment',
    '',
    description(row, key),
    'Usage-Based',
    iso(end),
    iso(start),
    priced.consumedQuantity,
    priced.consumedUnit,
    cost,
    priced.contractedUnitPrice,
    effectiveCost,
    o.vendorName,
    listCost,
    priced.listUnitPrice,
    priced.pricingQuantity,
    priced.pricingUnit,
    o.vendorName,
    o.vendorName,
    'AI and Machine Learning',
    r.model,
    priced.skuId,
    priced.skuPriceId,
    r.project_id,
    r.project_name,
    focusTags(r),
    r.key_prefix,
    r.unit,
    credits ? row.amount : '',
    perUsd ? perUsd.toFixed() : '',
    status,
    String(sku ? sku.lines : r.tasks),
    String(sku ? 0 : r.unpriced),
    counts.input,
    counts.output,
    counts.cache_read,
    counts.cache_write,
    counts.seconds,
    String(counts.images),
    String(r.version),
    price ? price.rate.toFixed() : '',
  ];
}

function description(row: GrainRow, key: string): string {
  const r = row.group;
  if (row.kind === 'adjustment') return `adjustments of project ${r.project_name}`;
  const credits = r.unit === 'CREDITS' ? ` (${row.amount} credits)` : '';
  if (row.sku) {
    const tier = row.sku.tier ? `, ${row.sku.tier} tier` : '';
    return `${r.model} ${row.sku.component}${tier}: ${row.sku.lines} tasks via API key ${key}${credits}`;
  }
  const unpriced = r.unpriced > 0 ? `; ${r.unpriced} tasks not priced (no published price)` : '';
  return `${r.model} via API key ${key}: ${row.amount} ${r.unit} not at a unit price (refunds, review resolutions)${unpriced}`;
}

/**
 * FOCUS Tags: the key's default tags as user-defined tags (unprefixed), then spendgate's own,
 * prefixed `spendgate/` as FOCUS asks of provider-defined tags. Request tags vary by task and are
 * reported by `spendReport` grouped by `tag:<name>`, not here (one row holds many tasks).
 */
function focusTags(r: GroupRow): string {
  const tags: Record<string, string | null> = {};
  for (const tag of r.key_tags ?? []) {
    const at = tag.indexOf('=');
    tags[tag.slice(0, at)] = tag.slice(at + 1);
  }
  tags['spendgate/project'] = r.project_name;
  tags['spendgate/api-key'] = r.key_prefix || null;
  return JSON.stringify(tags);
}

interface SkuColumns {
  consumedQuantity: string;
  consumedUnit: string;
  pricingQuantity: string;
  pricingUnit: string;
  listUnitPrice: string;
  contractedUnitPrice: string;
  skuId: string;
  skuPriceId: string;
}
const NO_SKU: SkuColumns = {
  consumedQuantity: '',
  consumedUnit: '',
  pricingQuantity: '',
  pricingUnit: '',
  listUnitPrice: '',
  contractedUnitPrice: '',
  skuId: '',
  skuPriceId: '',
};

/**
 * A SKU price's columns. The price list counts tokens per million, the rest one by one: the
 * pricing quantity is the consumed quantity ÷ per, the unit prices are the line's rates (list and
 * owed), so PricingQuantity × ListUnitPrice = ListCost exactly (credits converted: each rounded).
 */
function skuColumns(model: string, version: number, sku: SkuRow, costOf: (d: DecimalValue) => string): SkuColumns {
  const unit = consumedUnitOf(sku.component);
  const per = dec(sku.per);
  const tier = sku.tier ? `/${sku.tier}` : '';
  return {
    consumedQuantity: dec(sku.quantity).toFixed(),
    consumedUnit: unit,
    pricingQuantity: dec(sku.quantity).dividedBy(per).toFixed(),
    pricingUnit: per.equals(1) ? unit : `${per.toFixed()} ${unit}`,
    listUnitPrice: costOf(dec(sku.list_rate)),
    contractedUnitPrice: costOf(dec(sku.rate)),
    skuId: `${model}/${sku.component}`,
    skuPriceId: `${model}/${sku.component}${tier}@v${version}`,
  };
}

/** Charge line components (pricing/engine.ts): a token class, `images:<res>`, `video_seconds:<res>`, `request:<n>s`. */
function consumedUnitOf(component: string): string {
  if (component.startsWith('images:')) return 'Images';
  if (component.startsWith('video_seconds:')) return 'Seconds';
  if (component.startsWith('request:')) return 'Requests';
  return 'Tokens';
}

/** The x_ counts of a SKU row: only what its component counts. */
function countsOf(
  sku: SkuRow,
): Pick<GroupRow, 'input' | 'output' | 'cache_read' | 'cache_write' | 'seconds' | 'images'> {
  const q = dec(sku.quantity).toFixed();
  const c = sku.component;
  const requestSeconds = c.startsWith('request:') ? dec(c.slice(8, -1)).times(sku.quantity).toFixed() : '0';
  return {
    input: c === 'input' ? q : '0',
    output: c === 'output' ? q : '0',
    cache_read: c === 'cache_read' ? q : '0',
    cache_write: c.startsWith('cache_write') ? q : '0',
    seconds: c.startsWith('video_seconds:') ? q : requestSeconds,
    images: c.startsWith('images:') ? Number(q) : 0,
  };
}

function iso(d: Date): string {
  return d.toISOString().replace('.000Z', 'Z');
}
