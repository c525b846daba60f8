/**
 * Spend report from the daily roll-up (never a scan of raw tasks): totals per unit, grouped by
 * any of project, model, family, kind, day, week, month; `[from, to)` by UTC acceptance day.
 */
import type { Database } from '../database/database.js';
import { MODEL_ROUTES } from '../catalog/catalog.js';

export const GROUP_KEYS = ['project', 'model', 'family', 'kind', 'day', 'week', 'month'] as const;
export type GroupKey = (typeof GROUP_KEYS)[number];

export interface SpendRow {
  keys: string[];
  unit: 'CREDITS' | 'USD';
  amount: string;
  tasks: number;
  unpricedTasks: number;
  inputTokens: string;
  outputTokens: string;
  cacheReadTokens: string;
  cacheWriteTokens: string;
  videoSeconds: string;
  images: number;
}

const ROUTE_VALUES = MODEL_ROUTES.map((r) => `('${r.id}', '${r.family}', '${r.kind}')`).join(',');

const EXPR: Record<GroupKey, string> = {
  project: 'p.name',
  model: 's.model',
  family: "coalesce(c.family, '-')",
  kind: "coalesce(c.kind, '-')",
  day: "to_char(s.day, 'YYYY-MM-DD')",
  week: `to_char(date_trunc('week', s.day), 'IYYY-"W"IW')`,
  month: "to_char(s.day, 'YYYY-MM')",
};

export interface ReportQuery {
  from: Date;
  to: Date;
  groupBy: GroupKey[];
  projectIds?: string[];
  models?: string[];
}

export async function spendReport(db: Database, q: ReportQuery): Promise<SpendRow[]> {
  const keys = q.groupBy.map((k) => EXPR[k]);
  const keyList = keys.length ? keys.map((k, i) => `${k} AS k${i}`).join(', ') + ',' : '';
  const groupList = ['s.unit', ...keys].join(', ');
  const { rows } = await db.query(
    `SELECT ${keyList} s.unit, sum(s.amount)::text AS amount, sum(s.tasks)::int AS tasks, sum(s.unpriced_tasks)::int AS unpriced,
            sum(s.input_tokens)::text AS input, sum(s.output_tokens)::text AS output, sum(s.cache_read_tokens)::text AS cache_read,
            sum(s.cache_write_tokens)::text AS cache_write, sum(s.video_seconds)::text AS seconds, sum(s.images)::int AS images
     FROM spend_rollup s
     JOIN project p ON p.id = s.project_id
     LEFT JOIN (VALUES ${ROUTE_VALUES}) AS c(model, family, kind) ON c.model = s.model
     WHERE s.day >= ($1::timestamptz AT TIME ZONE 'UTC')::date AND s.day < ($2::timestamptz AT TIME ZONE 'UTC')::date
       AND ($3::uuid[] IS NULL OR s.project_id = ANY($3)) AND ($4::text[] IS NULL OR s.model = ANY($4))
     GROUP BY ${groupList} ORDER BY ${[...keys.map((_, i) => `k${i}`), 's.unit'].join(', ')}`,
    [q.from, q.to, q.projectIds ?? null, q.models ?? null],
  );
  return rows.map((r) => ({
    keys: q.groupBy.map((_, i) => String(r[`k${i}`])),
    unit: r.unit,
    amount: r.amount,
    tasks: r.tasks,
    unpricedTasks: r.unpriced,
    inputTokens: r.input,
    outputTokens: r.output,
    cacheReadTokens: r.cache_read,
    cacheWriteTokens: r.cache_write,
    videoSeconds: r.seconds,
    images: r.images,
  }));
}

/** CSV: one header row, stable columns, exact decimals as plain strings, unit in its own column. */
export function toCsv(groupBy: GroupKey[], rows: SpendRow[]): string {
  const header = [...groupBy, 'unit', 'amount', 'tasks', 'unpriced_tasks', 'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'video_seconds', 'images'];
  const esc = (v: string | number) => (/[",\n]/.test(String(v)) ? `"${String(v).replaceAll('"', '""')}"` : String(v));
  const lines = rows.map((r) =>
    [...r.keys, r.unit, r.amount, r.tasks, r.unpricedTasks, r.inputTokens, r.outputTokens, r.cacheReadTokens, r.cacheWriteTokens, r.videoSeconds, r.images].map(esc).join(','),
  );
  return [header.join(','), ...lines].join('\n') + '\n';
}
