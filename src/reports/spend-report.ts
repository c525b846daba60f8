/**
 * Spend reports from the daily roll-up (never a scan of raw tasks): one row per group and unit,
 * grouped by any of project, model, family, kind, day, week, month; `[from, to)` in UTC, by the
 * day of acceptance (the roll-up's grain is a UTC day, so from/to must be midnights).
 * Credits and USD are never summed: every row has one unit.
 */
import type { Database } from '../database/database.js';
import { MODEL_ROUTES } from '../catalog/catalog.js';
import { ApiError } from '../common/api-error.js';

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
  project: () => 'p.name',
  model: (col) => col,
  family: (col) => col,
  kind: (col) => col,
  day: (col) => `to_char(${col}, 'YYYY-MM-DD')`,
  week: (col) => `to_char(${col}, 'IYYY-"W"IW')`,
  month: (col) => `to_char(${col}, 'YYYY-MM')`,
};
const NEEDS_CATALOG = new Set<GroupKey>(['family', 'kind']);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

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
  const badProject = q.projectIds?.find((id) => !UUID.test(id));
  if (badProject) throw ApiError.badRequest(`projectIds: "${badProject.slice(0, 40)}" is not a project id`);
  const badStatus = q.statuses?.find((s) => !(REPORT_STATUSES as readonly string[]).includes(s));
  if (badStatus) throw ApiError.badRequest(`statuses: "${badStatus}" is not one of ${REPORT_STATUSES.join(', ')}`);
}

export async function spendReport(db: Pick<Database, 'query'>, q: ReportQuery): Promise<SpendRow[]> {
  checkReportQuery(q);
  const inner = q.groupBy.map((k, i) => `${INNER[k]} AS g${i}`);
  const outer = q.groupBy.map((k, i) => `${OUTER[k](`g.g${i}`)} AS k${i}`);
  const catalog = q.families || q.kinds || q.groupBy.some((k) => NEEDS_CATALOG.has(k));
  const measures = new Set(q.measures ?? ALL_MEASURES);
  const sums: string[] = [
    'sum(s.amount) AS amount',
    'sum(s.tasks)::int AS tasks',
    ...(measures.has('unpriced') ? ['sum(s.unpriced_tasks)::int AS unpriced'] : []),
    ...(measures.has('tokens')
      ? ['sum(s.input_tokens) AS input', 'sum(s.output_tokens) AS output', 'sum(s.cache_read_tokens) AS cache_read',
         'sum(s.cache_write_5m_tokens) AS cw5m', 'sum(s.cache_write_1h_tokens) AS cw1h', 'sum(s.cache_write_tokens) AS cw']
      : []),
    ...(measures.has('media') ? ['sum(s.video_seconds) AS seconds', 'sum(s.images)::int AS images'] : []),
  ];
  // Byte-order ("C") sorting of names: stable and cheaper than the locale's collation.
  const order = q.groupBy.map((k, i) => (k === 'project' ? 'p.name COLLATE "C"' : k === 'model' || k === 'family' || k === 'kind' ? `g.g${i} COLLATE "C"` : `g.g${i}`));
  const { rows } = await db.query(
    // Only the keys as text and the sums leave the database: no ids or dates for the client to parse.
    `SELECT ${[...outer, 'g.unit', ...sums.map((sql) => `g.${sql.split(' AS ')[1]}`)].join(', ')} FROM (
       SELECT ${[...inner, 's.unit', ...sums].join(', ')}
       FROM spend_rollup s
       ${catalog ? `LEFT JOIN (VALUES ${ROUTE_VALUES}) AS c(model, family, kind) ON c.model = s.model` : ''}
       WHERE s.day >= ($1::timestamptz AT TIME ZONE 'UTC')::date AND s.day < ($2::timestamptz AT TIME ZONE 'UTC')::date
         AND ($3::uuid[] IS NULL OR s.project_id = ANY($3)) AND ($4::text[] IS NULL OR s.model = ANY($4))
         ${q.families ? 'AND c.family = ANY($5)' : 'AND $5::text[] IS NULL'} ${q.kinds ? 'AND c.kind = ANY($6)' : 'AND $6::text[] IS NULL'}
         AND ($7::text[] IS NULL OR s.status = ANY($7))
       GROUP BY ${[...q.groupBy.map((_, i) => `g${i}`), 's.unit'].join(', ')}
     ) g
     ${q.groupBy.includes('project') ? `JOIN project p ON p.id = g.g${q.groupBy.indexOf('project')}` : ''}
     ORDER BY ${[...order, 'g.unit'].join(', ')}`,
    [q.from, q.to, q.projectIds ?? null, q.models ?? null, q.families ?? null, q.kinds ?? null, q.statuses ?? null],
  );
  // numeric and bigint sums arrive as exact strings (pg's text protocol), never as floats.
  return rows.map((r) => ({
    keys: q.groupBy.map((_, i) => String(r[`k${i}`])),
    unit: r.unit,
    amount: r.amount,
    tasks: r.tasks,
    unpricedTasks: r.unpriced ?? 0,
    inputTokens: r.input ?? '0',
    outputTokens: r.output ?? '0',
    cacheReadTokens: r.cache_read ?? '0',
    cacheWrite5mTokens: r.cw5m ?? '0',
    cacheWrite1hTokens: r.cw1h ?? '0',
    cacheWriteTokens: r.cw ?? '0',
    videoSeconds: r.seconds ?? '0',
    images: r.images ?? 0,
  }));
}

export const CSV_COLUMNS = [
  'unit', 'amount', 'tasks', 'unpriced_tasks', 'input_tokens', 'output_tokens', 'cache_read_tokens',
  'cache_write_5m_tokens', 'cache_write_1h_tokens', 'cache_write_tokens', 'video_seconds', 'images',
] as const;

/** CSV: one header row, stable columns, exact decimals as plain strings, unit in its own column. */
export function toCsv(groupBy: GroupKey[], rows: SpendRow[]): string {
  const esc = (v: string | number) => (/[",\n\r]/.test(String(v)) ? `"${String(v).replaceAll('"', '""')}"` : String(v));
  const lines = rows.map((r) =>
    [
      ...r.keys, r.unit, r.amount, r.tasks, r.unpricedTasks, r.inputTokens, r.outputTokens, r.cacheReadTokens,
      r.cacheWrite5mTokens, r.cacheWrite1hTokens, r.cacheWriteTokens, r.videoSeconds, r.images,
    ].map(esc).join(','),
  );
  return [[...groupBy, ...CSV_COLUMNS].join(','), ...lines].join('\n') + '\n';
}
