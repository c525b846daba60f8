/**
 * Spend as FOCUS 1.2 (the FinOps Open Cost and Usage Specification), for finance tools:
 * GET /reports/focus.csv and `spendgate report --format focus`.
 *
 * Grain: one row per charge period (a UTC day) × project (SubAccount) × API key × model × unit ×
 * price-book version, from the `apiKey` roll-up (spend_rollup_by), never raw tasks. Costs:
 * - USD rows: BilledCost = EffectiveCost = ContractedCost = the exact amount owed (under the
 *   contract of the task's price-book version, decisions §19); ListCost the same tasks at the price
 *   book's list rates (the roll-up keeps list minus contracted). Without a contract they are equal.
 *   EffectiveCost spreads a commitment's true-up over its month's usage (focus-effective.ts).
 * - Credit rows (decisions §7): the credits in x_Credits; a FOCUS cost only with CREDITS_PER_USD,
 *   credits ÷ rate rounded half-even to 10 places, the rate in x_CreditsPerUsd. Without it the cost
 *   columns are 0 (FOCUS does not allow them empty) and x_CostStatus says the row was not converted.
 * - Adjustments without a task are ChargeCategory Adjustment; everything else is Usage (positive
 *   or negative, refunds included, as FOCUS defines it). ChargeClass stays null: spendgate posts
 *   corrections in the period they count in, never into an invoiced one.
 */
import type { Unit } from '../pricing/money.js';
import { findRoute } from '../catalog/catalog.js';
import { csvLine } from '../common/csv.js';
import type { Database } from '../database/database.js';
import { dec, Decimal, type Decimal as DecimalValue } from '../pricing/money.js';
import { checkReportQuery } from './spend-report.js';
import { effectiveDeltas, rowKey } from './focus-effective.js';

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
  'EffectiveCost',
  'InvoiceIssuerName',
  'ListCost',
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
] as const;

export interface FocusOptions {
  from: Date;
  to: Date;
  projectIds?: string[];
  /** Credits per USD (CREDITS_PER_USD); without it credit rows carry no cost. */
  creditsPerUsd?: DecimalValue;
  /** Who bills (ProviderName, InvoiceIssuerName): the vendor in front of which spendgate runs. */
  vendorName: string;
}

interface Row {
  day: Date;
  project_id: string;
  project_name: string;
  key_prefix: string;
  model: string;
  unit: Unit;
  version: number;
  tasks: number;
  unpriced: number;
  amount: string;
  list_amount: string;
  input: string;
  output: string;
  cache_read: string;
  cache_write: string;
  seconds: string;
  images: number;
  /** The version prices this model per request (by the selected duration), not per second. */
  per_request: boolean;
  /** The key's default tags ("name=value"), the same for every task of the key. */
  key_tags: string[] | null;
}

const COST_PLACES = 10;

export async function focusRows(db: Pick<Database, 'query'>, o: FocusOptions): Promise<string[][]> {
  checkReportQuery({ from: o.from, to: o.to, groupBy: [], ...(o.projectIds ? { projectIds: o.projectIds } : {}) });
  const { rows } = await db.query<Row>(
    `SELECT s.period AS day, s.project_id::text AS project_id, p.name AS project_name, s.value AS key_prefix, s.model, s.unit,
            s.price_book_version AS version, s.tasks, s.unpriced_tasks AS unpriced, s.amount::text AS amount,
            (s.amount + s.contract_discount)::text AS list_amount, s.input_tokens::text AS input, s.output_tokens::text AS output, s.cache_read_tokens::text AS cache_read,
            (s.cache_write_5m_tokens + s.cache_write_1h_tokens + s.cache_write_tokens)::text AS cache_write,
            s.video_seconds::text AS seconds, s.images,
            EXISTS (SELECT 1 FROM price_rate pr WHERE pr.version = s.price_book_version AND pr.model = s.model AND pr.component = 'request') AS per_request,
            k.tags AS key_tags
     FROM spend_rollup_by s JOIN project p ON p.id = s.project_id
     LEFT JOIN api_key k ON k.prefix = s.value AND s.value <> ''
     WHERE s.dimension = 'apiKey' AND s.period >= ($1::timestamptz AT TIME ZONE 'UTC')::date AND s.period < ($2::timestamptz AT TIME ZONE 'UTC')::date
       AND ($3::uuid[] IS NULL OR s.project_id = ANY($3))
     ORDER BY s.period, p.name COLLATE "C", s.value, s.model, s.unit, s.price_book_version`,
    [o.from, o.to, o.projectIds ?? null],
  );
  const deltas = await effectiveDeltas(db, o.from, o.to);
  return rows.map((r) => {
    const key = rowKey(r.day.toISOString().slice(0, 10), r.project_id, r.key_prefix, r.model, r.unit, r.version);
    return focusRecord(r, o, deltas.get(key));
  });
}

export async function focusCsv(db: Pick<Database, 'query'>, o: FocusOptions): Promise<string> {
  const rows = await focusRows(db, o);
  return [csvLine([...FOCUS_COLUMNS]), ...rows.map((r) => csvLine(r))].join('\n') + '\n';
}

function focusRecord(r: Row, o: FocusOptions, effectiveDelta?: DecimalValue): string[] {
  const start = r.day;
  const end = new Date(start.getTime() + 86_400_000);
  const monthStart = new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), 1));
  const monthEnd = new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1));
  const adjustment = r.model === '(adjustment)';
  const credits = r.unit === 'CREDITS';
  const costOf = (amount: DecimalValue) =>
    !credits
      ? amount.toFixed()
      : o.creditsPerUsd
        ? amount.dividedBy(o.creditsPerUsd).toDecimalPlaces(COST_PLACES, Decimal.ROUND_HALF_EVEN).toFixed()
        : '0';
  const cost = costOf(dec(r.amount));
  const listCost = costOf(dec(r.list_amount));
  const effectiveCost = effectiveDelta ? costOf(dec(r.amount).plus(effectiveDelta)) : cost;
  const status = !credits
    ? 'exact'
    : o.creditsPerUsd
      ? `converted at ${o.creditsPerUsd.toFixed()} credits per USD, ${COST_PLACES} places half-even`
      : 'credits not converted: set CREDITS_PER_USD for a cost';
  const [quantity, unit] = adjustment ? ['', ''] : consumed(r);
  const pricing = adjustment ? ['', ''] : pricingOf(r, quantity);
  const tags = focusTags(r);
  const key = r.key_prefix || 'no key';
  return [
    cost,
    'spendgate',
    'spendgate',
    'USD',
    iso(monthEnd),
    iso(monthStart),
    adjustment ? 'Adjustment' : 'Usage',
    '',
    adjustment
      ? `adjustments of project ${r.project_name}`
      : `${r.model}: ${r.tasks} tasks via API key ${key}${credits ? ` (${r.amount} credits)` : ''}`,
    'Usage-Based',
    iso(end),
    iso(start),
    quantity,
    unit,
    cost,
    effectiveCost,
    o.vendorName,
    listCost,
    pricing[0]!,
    pricing[1]!,
    o.vendorName,
    o.vendorName,
    'AI and Machine Learning',
    r.model,
    r.model,
    `${r.model}@v${r.version}`,
    r.project_id,
    r.project_name,
    tags,
    r.key_prefix,
    r.unit,
    credits ? r.amount : '',
    credits && o.creditsPerUsd ? o.creditsPerUsd.toFixed() : '',
    status,
    String(r.tasks),
    String(r.unpriced),
    r.input,
    r.output,
    r.cache_read,
    r.cache_write,
    r.seconds,
    String(r.images),
    String(r.version),
  ];
}

/**
 * FOCUS Tags: the key's default tags as user-defined tags (unprefixed), then spendgate's own,
 * prefixed `spendgate/` as FOCUS asks of provider-defined tags. Request tags vary by task and are
 * reported by `spendReport` grouped by `tag:<name>`, not here (one row holds many tasks).
 */
function focusTags(r: Row): string {
  const tags: Record<string, string | null> = {};
  for (const tag of r.key_tags ?? []) {
    const at = tag.indexOf('=');
    tags[tag.slice(0, at)] = tag.slice(at + 1);
  }
  tags['spendgate/project'] = r.project_name;
  tags['spendgate/api-key'] = r.key_prefix || null;
  return JSON.stringify(tags);
}

/** What was used, in the unit the price list counts: tokens, seconds, images, or requests (per-request video). */
function consumed(r: Row): [string, string] {
  const route = findRoute(r.model);
  if (!route || route.kind === 'chat') {
    const tokens = [r.input, r.output, r.cache_read, r.cache_write].reduce((s, t) => s.plus(dec(t)), dec(0));
    return [tokens.toFixed(), 'Tokens'];
  }
  if (route.kind === 'image') return [String(r.images), 'Images'];
  if (r.per_request) return [String(r.tasks), 'Requests'];
  return [dec(r.seconds).toFixed(), 'Seconds'];
}

/** Token prices are per million tokens; everything else is priced per one of what it counts. */
function pricingOf(r: Row, quantity: string): [string, string] {
  const route = findRoute(r.model);
  if (!route || route.kind === 'chat') return [dec(quantity).dividedBy(1_000_000).toFixed(), '1000000 Tokens'];
  return [quantity, route.kind === 'image' ? 'Images' : r.per_request ? 'Requests' : 'Seconds'];
}

function iso(d: Date): string {
  return d.toISOString().replace('.000Z', 'Z');
}
