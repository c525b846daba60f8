/**
 * Spend reports from the daily roll-up (never a scan of raw tasks): one row per group and unit,
 * read from spend_rollup (by outcome) when statuses are filtered, else from spend_rollup_total,
 * grouped by any of project, model, family, kind, day, week, month; `[from, to)` in UTC, by the
 * day of acceptance (the roll-up's grain is a UTC day, so from/to must be midnights).
 * Credits and USD are never summed: every row has one unit.
 */
import type { Database } from '../database/database.js';
import { MODEL_ROUTES } from '../catalog/catalog.js';
import { ApiError } from '../common/api-error.js';
import { csvLine } from '../common/csv.js';
import { isUuid } from '../common/ids.js';

export const GROUP_KEYS = ['project', 'model', 'family', 'kind', 'day', 'week', 'month'] as const;
export type GroupKey = (typeof GROUP_KEYS)[number];
export const REPORT_STATUSES = ['ready', 'failed', 'adjustment'] as const;

/** A measure that was not asked for reads as zero. */
export interface SpendRow {
  keys: string[];
  unit: 'CREDITS' | 'USD';
  amount: string;
  tasks: number;
  unpricedTasks: number;
  inputTokens: string;
  outputTokens: string;
  cacheReadTokens: string;
  cacheWrite5mTokens: string;
  cacheWrite1hTokens: string;
  cacheWriteTokens: string;
  videoSeconds: string;
  images: number;
}

/** Optional measures beyond amount and task count: fetching only what is asked keeps large reports fast. */
export type Measure = 'unpriced' | 'tokens' | 'media';
export const ALL_MEASURES: readonly Measure[] = ['unpriced', 'tokens', 'media'];

export interface ReportQuery {
  from: Date;
  to: Date;
  groupBy: GroupKey[];
  measures?: readonly Measure[];
  projectIds?: string[];
  models?: string[];
  families?: string[];
  kinds?: string[];
  statuses?: string[];
}

const ROUTE_VALUES = MODEL_ROUTES.map((r) => `('${r.id}', '${r.family}', '${r.kind}')`).join(',');

/**
 * Each key is computed in two steps: the inner query groups the roll-up by ids and dates (cheap to
 * hash), the outer one turns them into names and text on the already-grouped rows.
 */
const INNER: Record<GroupKey, string> = {
  project: 's.project_id',
  model: 's.model',
  family: "coalesce(c.family, '-')",
  kind: "coalesce(c.kind, '-')",
  day: 's.day',
  week: "date_trunc('week', s.day)::date",
  month: "date_trunc('month', s.day)::date",
};
const OUTER: Record<GroupKey, (col: string) => string> = {
  project: (col) => `${col}::text`, // named (and ranked for sorting) in JS: no join, no sort in SQL
  model: (col) => col,
  family: (col) => col,
  kind: (col) => col,
  day: (col) => `to_char(${col}, 'YYYY-MM-DD')`,
  week: (col) => `to_char(${col}, 'IYYY-"W"IW')`,
  month: (col) => `to_char(${col}, 'YYYY-MM')`,
};
const NEEDS_CATALOG = new Set<GroupKey>(['family', 'kind']);


/** Checks a report query and says which field is wrong. */
export function checkReportQuery(q: ReportQuery): void {
  for (const [field, value] of [['from', q.from], ['to', q.to]] as const) {
    if (!(value instanceof Date) || Number.isNaN(value.getTime())) throw ApiError.badRequest(`${field}: must be a date-time`);
    if (value.getTime() % 86_400_000 !== 0) {
      throw ApiError.badRequest(`${field}: must be a UTC midnight (reports are kept per UTC day), e.g. 2026-11-01T00:00:00Z`);
    }
  }
  if (q.to <= q.from) throw ApiError.badRequest('to: must be after from');
  const badKey = q.groupBy.find((k) => !(GROUP_KEYS as readonly string[]).includes(k));
  if (badKey) throw ApiError.badRequest(`groupBy: "${badKey}" is not one of ${GROUP_KEYS.join(', ')}`);
  if (new Set(q.groupBy).size !== q.groupBy.length) throw ApiError.badRequest('groupBy: a key is repeated');
  const badProject = q.projectIds?.find((id) => !isUuid(id));
  if (badProject) throw ApiError.badRequest(`projectIds: "${badProject.slice(0, 40)}" is not a project id`);
  const badStatus = q.statuses?.find((s) => !(REPORT_STATUSES as readonly string[]).includes(s));
  if (badStatus) throw ApiError.badRequest(`statuses: "${badStatus}" is not one of ${REPORT_STATUSES.join(', ')}`);
}

/** The measures as [roll-up column, output alias]; int columns stay int when summed. */
const MEASURE_COLUMNS: Record<'base' | Measure, Array<[string, string, string?]>> = {
  base: [['amount', 'amount'], ['tasks', 'tasks', 'int']],
  unpriced: [['unpriced_tasks', 'unpriced', 'int']],
  tokens: [['input_tokens', 'input'], ['output_tokens', 'output'], ['cache_read_tokens', 'cache_read'],
    ['cache_write_5m_tokens', 'cw5m'], ['cache_write_1h_tokens', 'cw1h'], ['cache_write_tokens', 'cw']],
  media: [['video_seconds', 'seconds'], ['images', 'images', 'int']],
};

/** The keys that make every spend_rollup_total row its own group (family and kind follow from model). */
const GRAIN: readonly GroupKey[] = ['project', 'model', 'day'];

export async function spendReport(db: Pick<Database, 'query' | 'queryArrays'>, q: ReportQuery): Promise<SpendRow[]> {
  checkReportQuery(q);
  const catalog = q.families || q.kinds || q.groupBy.some((k) => NEEDS_CATALOG.has(k));
  const measures = new Set(q.measures ?? ALL_MEASURES);
  const columns = (['base', ...ALL_MEASURES] as const).filter((m) => m === 'base' || measures.has(m)).flatMap((m) => MEASURE_COLUMNS[m]);
  // Without a status filter the report reads the total over outcomes; grouped at (or below) its
  // grain, each row is a group and the database only filters (naming and sorting happen below).
  const source = q.statuses ? 'spend_rollup' : 'spend_rollup_total';
  const perRow = !q.statuses && GRAIN.every((k) => q.groupBy.includes(k));
  const inner = q.groupBy.map((k, i) => `${INNER[k]} AS g${i}`);
  const outer = q.groupBy.map((k, i) => `${OUTER[k](`g.g${i}`)} AS k${i}`);
  const values = columns.map(([col, alias, cast]) =>
    perRow ? `s.${col} AS ${alias}` : `sum(s.${col})${cast ? `::${cast}` : ''} AS ${alias}`,
  );
  const [rows, projects] = await Promise.all([
    db.queryArrays(
      `SELECT ${[...outer, 'g.unit', ...columns.map(([, alias]) => `g.${alias}`)].join(', ')} FROM (
         SELECT ${[...inner, 's.unit', ...values].join(', ')}
         FROM ${source} s
         ${catalog ? `LEFT JOIN (VALUES ${ROUTE_VALUES}) AS c(model, family, kind) ON c.model = s.model` : ''}
         WHERE s.day >= ($1::timestamptz AT TIME ZONE 'UTC')::date AND s.day < ($2::timestamptz AT TIME ZONE 'UTC')::date
           AND ($3::uuid[] IS NULL OR s.project_id = ANY($3)) AND ($4::text[] IS NULL OR s.model = ANY($4))
           ${q.families ? 'AND c.family = ANY($5)' : 'AND $5::text[] IS NULL'} ${q.kinds ? 'AND c.kind = ANY($6)' : 'AND $6::text[] IS NULL'}
           ${q.statuses ? 'AND s.status = ANY($7)' : 'AND $7::text[] IS NULL'}
         ${perRow ? '' : `GROUP BY ${[...q.groupBy.map((_, i) => `g${i}`), 's.unit'].join(', ')}`}
       ) g`,
      [q.from, q.to, q.projectIds ?? null, q.models ?? null, q.families ?? null, q.kinds ?? null, q.statuses ?? null],
    ),
    q.groupBy.includes('project') ? projectNames(db, q.projectIds) : null,
  ]);
  // Columns: the keys, unit, then the measures in `columns` order. numeric and bigint sums arrive
  // as exact strings (pg's text protocol), never as floats; a measure not asked for reads as zero.
  const n = q.groupBy.length;
  const at = q.groupBy.indexOf('project');
  const index = new Map(columns.map(([, alias], i) => [alias, n + 1 + i]));
  const pick = (alias: string) => index.get(alias) ?? -1;
  const [amount, tasks, unpriced, input, output, cacheRead, cw5m, cw1h, cw, seconds, images] = [
    'amount', 'tasks', 'unpriced', 'input', 'output', 'cache_read', 'cw5m', 'cw1h', 'cw', 'seconds', 'images',
  ].map(pick) as number[];
  const text = (r: unknown[], i: number) => (i < 0 ? '0' : (r[i] as string));
  const count = (r: unknown[], i: number) => (i < 0 ? 0 : (r[i] as number));
  // What each row sorts by, column by column in groupBy order, then unit: a project by its rank
  // among names in byte order (one missing from the names, if one ever were, sorts last by id),
  // the other keys as their ASCII text (ISO dates and weeks sort by time).
  const sortColumns: string[][] = [...q.groupBy.map(() => [] as string[]), []];
  const report = rows.map((r): SpendRow => {
    const keys: string[] = new Array(n);
    for (let i = 0; i < n; i++) {
      if (i === at) {
        const project = projects?.get(r[i] as string);
        keys[i] = project?.name ?? String(r[i]);
        sortColumns[i]!.push(project?.sortKey ?? `~${String(r[i])}`);
      } else {
        keys[i] = String(r[i]);
        sortColumns[i]!.push(keys[i]!);
      }
    }
    sortColumns[n]!.push(String(r[n]));
    return {
      keys,
      unit: r[n] as SpendRow['unit'],
      amount: text(r, amount!),
      tasks: count(r, tasks!),
      unpricedTasks: count(r, unpriced!),
      inputTokens: text(r, input!),
      outputTokens: text(r, output!),
      cacheReadTokens: text(r, cacheRead!),
      cacheWrite5mTokens: text(r, cw5m!),
      cacheWrite1hTokens: text(r, cw1h!),
      cacheWriteTokens: text(r, cw!),
      videoSeconds: text(r, seconds!),
      images: count(r, images!),
    };
  });
  // Sorted here rather than in SQL: measured, about a third of the report's time at 9,000 groups.
  return sortedOrder(sortColumns, report.length).map((i) => report[i]!);
}

/**
 * The order of rows by several text columns, compared column by column in byte order. Each
 * column has few distinct values (projects, models, days), so they are ranked once and every row
 * gets one number (the ranks in mixed radix): sorting compares numbers, not strings.
 */
export function sortedOrder(columns: string[][], rowCount: number): number[] {
  const weight = new Float64Array(rowCount);
  let radix = 1;
  for (let c = columns.length - 1; c >= 0 && radix <= Number.MAX_SAFE_INTEGER; c--) {
    const column = columns[c]!;
    const rank = new Map([...new Set(column)].sort(compareText).map((v, i) => [v, i]));
    for (let r = 0; r < rowCount; r++) weight[r]! += rank.get(column[r]!)! * radix;
    radix *= rank.size;
  }
  if (radix <= Math.max(4 * rowCount, 65_536)) return countingOrder(weight, radix);
  const order = Array.from({ length: rowCount }, (_, i) => i);
  if (radix <= Number.MAX_SAFE_INTEGER) return order.sort((a, b) => weight[a]! - weight[b]!);
  // Too many distinct combinations for one exact number (not met in practice): compare the texts.
  return order.sort((a, b) => {
    for (const column of columns) {
      const d = compareText(column[a]!, column[b]!);
      if (d !== 0) return d;
    }
    return 0;
  });
}

/** Counting sort of row indices by small integer weights: linear, stable. */
function countingOrder(weight: Float64Array, radix: number): number[] {
  const starts = new Int32Array(radix + 1);
  for (const w of weight) starts[w + 1]! += 1;
  for (let k = 0; k < radix; k++) starts[k + 1]! += starts[k]!;
  const order: number[] = new Array(weight.length);
  for (let r = 0; r < weight.length; r++) order[starts[weight[r]!]!++] = r;
  return order;
}

/** Byte order for the ASCII keys (model ids, families, kinds, ISO dates), like COLLATE "C". */
function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The reported projects' names (all, or those the report is scoped to) and their places in byte
 * order of names: ranks within a subset sort the same as ranks among all projects.
 */
async function projectNames(db: Pick<Database, 'query'>, scope: readonly string[] | undefined): Promise<Map<string, { name: string; sortKey: string }>> {
  const { rows } = await db.query<{ id: string; name: string }>(
    'SELECT id::text AS id, name FROM project WHERE $1::uuid[] IS NULL OR id = ANY($1) ORDER BY name COLLATE "C"',
    [scope ?? null],
  );
  // The rank, zero-padded, sorts as text like the names do in byte order.
  return new Map(rows.map((r, rank) => [r.id, { name: r.name, sortKey: String(rank).padStart(10, '0') }]));
}

export const CSV_COLUMNS = [
  'unit', 'amount', 'tasks', 'unpriced_tasks', 'input_tokens', 'output_tokens', 'cache_read_tokens',
  'cache_write_5m_tokens', 'cache_write_1h_tokens', 'cache_write_tokens', 'video_seconds', 'images',
] as const;

/**
 * CSV: one header row, stable columns, exact decimals as plain strings, unit in its own column.
 * Cells go through csvCell (quoting, and formula injection neutralised: a project may be named
 * "=HYPERLINK(…)").
 */
export function toCsv(groupBy: GroupKey[], rows: SpendRow[]): string {
  const lines = rows.map((r) =>
    csvLine([
      ...r.keys, r.unit, r.amount, r.tasks, r.unpricedTasks, r.inputTokens, r.outputTokens, r.cacheReadTokens,
      r.cacheWrite5mTokens, r.cacheWrite1hTokens, r.cacheWriteTokens, r.videoSeconds, r.images,
    ]),
  );
  return [csvLine([...groupBy, ...CSV_COLUMNS]), ...lines].join('\n') + '\n';
}
