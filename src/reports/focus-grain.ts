/**
 * The FOCUS export's rows before they are written (focus-export.ts): one row per SKU price, that is
 * per charge line component at one rate, of each (day, project, API key, model, unit, price-book
 * version), from spend_rollup_sku; and, where the key's totals in spend_rollup_by hold more than
 * its lines (a refund, a review's resolution, an unpriced task, a month archived before lines were
 * rolled up), one row for the difference, which no unit price explains (decisions §19).
 *
 * Amounts stay exact: a SKU row's amount is quantity ÷ per × rate summed over its tasks, so its
 * unit price times its pricing quantity is its cost, list and contracted alike.
 */
import type { Unit } from '../pricing/money.js';
import type { Database } from '../database/database.js';
import { dec } from '../pricing/money.js';
import { checkReportQuery } from './spend-report.js';

/** The totals of one (day, project, API key, model, unit, price-book version), from spend_rollup_by. */
export interface GroupRow {
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
  /** The key's default tags ("name=value"), the same for every task of the key. */
  key_tags: string[] | null;
}

/** One SKU price of a group: a charge line component at one rate, summed over the group's tasks. */
export interface SkuRow {
  day: Date;
  project_id: string;
  key_prefix: string;
  model: string;
  unit: Unit;
  version: number;
  component: string;
  tier: string;
  rate: string;
  per: string;
  list_rate: string;
  lines: number;
  quantity: string;
  amount: string;
  list_amount: string;
}

export interface GrainRow {
  group: GroupRow;
  /** `usage` at a SKU price; `adjustment`, a project's own (no task); `unrated`, what no line carries. */
  kind: 'usage' | 'adjustment' | 'unrated';
  sku?: SkuRow;
  /** In the group's unit, exact: what is owed, and the same at list prices. */
  amount: string;
  listAmount: string;
  /** Unique within an export: the group's key, then the SKU price ('' for the other kinds). */
  key: string;
}

/** A group's key (day, project, key, model, unit, price-book version). */
export const groupKey = (day: string, project: string, key: string, model: string, unit: string, version: number) =>
  [day, project, key, model, unit, version].join('|');

const dayOf = (d: Date) => d.toISOString().slice(0, 10);
const keyOf = (r: Pick<GroupRow, 'day' | 'project_id' | 'key_prefix' | 'model' | 'unit' | 'version'>) =>
  groupKey(dayOf(r.day), r.project_id, r.key_prefix, r.model, r.unit, r.version);

export async function focusGrain(
  db: Pick<Database, 'query'>,
  from: Date,
  to: Date,
  projectIds?: string[],
): Promise<GrainRow[]> {
  checkReportQuery({ from, to, groupBy: [], ...(projectIds ? { projectIds } : {}) });
  const window = [from, to, projectIds ?? null];
  const { rows: groups } = await db.query<GroupRow>(
    `SELECT s.period AS day, s.project_id::text AS project_id, p.name AS project_name, s.value AS key_prefix, s.model, s.unit,
            s.price_book_version AS version, s.tasks, s.unpriced_tasks AS unpriced, s.amount::text AS amount,
            (s.amount + s.contract_discount)::text AS list_amount, s.input_tokens::text AS input, s.output_tokens::text AS output, s.cache_read_tokens::text AS cache_read,
            (s.cache_write_5m_tokens + s.cache_write_1h_tokens + s.cache_write_tokens)::text AS cache_write,
            s.video_seconds::text AS seconds, s.images, k.tags AS key_tags
     FROM spend_rollup_by s JOIN project p ON p.id = s.project_id
     LEFT JOIN api_key k ON k.prefix = s.value AND s.value <> ''
     WHERE s.dimension = 'apiKey' AND s.period >= ($1::timestamptz AT TIME ZONE 'UTC')::date AND s.period < ($2::timestamptz AT TIME ZONE 'UTC')::date
       AND ($3::uuid[] IS NULL OR s.project_id = ANY($3))
     ORDER BY s.period, p.name COLLATE "C", s.value, s.model, s.unit, s.price_book_version`,
    window,
  );
  const { rows: skus } = await db.query<SkuRow>(
    `SELECT period AS day, project_id::text AS project_id, key_prefix, model, unit, price_book_version AS version, component, tier,
            rate::text AS rate, per::text AS per, list_rate::text AS list_rate, lines, quantity::text AS quantity,
            amount::text AS amount, list_amount::text AS list_amount
     FROM spend_rollup_sku
     WHERE period >= ($1::timestamptz AT TIME ZONE 'UTC')::date AND period < ($2::timestamptz AT TIME ZONE 'UTC')::date
       AND ($3::uuid[] IS NULL OR project_id = ANY($3))
     ORDER BY component COLLATE "C", tier COLLATE "C", rate, per`,
    window,
  );
  const skusOf = new Map<string, SkuRow[]>();
  for (const s of skus) {
    const k = keyOf(s);
    const list = skusOf.get(k);
    if (list) list.push(s);
    else skusOf.set(k, [s]);
  }
  const out: GrainRow[] = [];
  for (const group of groups) {
    const key = keyOf(group);
    if (group.model === '(adjustment)') {
      out.push({ group, kind: 'adjustment', amount: group.amount, listAmount: group.list_amount, key: `${key}|` });
      continue;
    }
    const own = skusOf.get(key) ?? [];
    for (const sku of own) {
      const at = `${key}|${sku.component}|${sku.tier}|${sku.rate}|${sku.per}`;
      out.push({ group, kind: 'usage', sku, amount: sku.amount, listAmount: sku.list_amount, key: at });
    }
    const amount = own.reduce((s, r) => s.minus(r.amount), dec(group.amount));
    const listAmount = own.reduce((s, r) => s.minus(r.list_amount), dec(group.list_amount));
    if (!amount.isZero() || !listAmount.isZero() || group.unpriced > 0) {
      // With no SKU rows at all, the group's own counts go with it (they are all it has).
      const counted = own.length === 0 ? group : { ...group, tasks: group.unpriced, ...NOTHING_COUNTED };
      out.push({
        group: counted,
        kind: 'unrated',
        amount: amount.toFixed(),
        listAmount: listAmount.toFixed(),
        key: `${key}|`,
      });
    }
  }
  return out;
}

const NOTHING_COUNTED = { input: '0', output: '0', cache_read: '0', cache_write: '0', seconds: '0', images: 0 };
