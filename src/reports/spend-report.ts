/**
 * Spend reports from the roll-ups (never a scan of raw tasks): one row per group and unit, in
 * `[from, to)` UTC by the day of acceptance. Credits and USD are never summed: every row has one unit.
 *
 * Where a report reads:
 * - by project, model, family, kind, day, week, month: spend_rollup_total (spend_rollup when
 *   statuses are filtered); grouped at its grain (project × model × day) each row is a group;
 * - by who (decisions §7), spend_rollup_by of one dimension: `apiKey` (by the key's prefix) and
 *   `tag:<name>` per day; `user` from spend_rollup_user(_all), per project and month (so user
 *   reports take month-aligned ranges, and no day, week or model). A task without the tag falls in a `(none)` group:
 * the total of the same other keys
 *   minus what the tag's values hold (each task has at most one value per tag name). Tasks without
 *   a key or a user are `(none)` rows of their own. One dimension per report: a task's spend is
 *   rolled up once per key, per user and per tag, never per combination.
 */
import type { Database } from '../database/database.js';
import { MODEL_ROUTES } from '../catalog/catalog.js';
import { dec } from '../pricing/money.js';
import { firstGroups, ordered, untagged } from './report-rows.js';
import { keysOf, sentCell } from './report-cells.js';
import {
  ALL_MEASURES,
  checkReportQuery,
  NONE,
  type Dimension,
  type GroupKey,
  type Measure,
  type ReportQuery,
  type SpendRow,
} from './report-query.js';

export { checkReportQuery, GROUP_KEYS, MAX_FIRST, NONE, REPORT_STATUSES, ALL_MEASURES } from './report-query.js';
export type { GroupKey, Measure, ReportQuery, SpendRow } from './report-query.js';

const ROUTE_VALUES = MODEL_ROUTES.map((r) => `('${r.id}', '${r.family}', '${r.kind}')`).join(',');

/** Each key is computed in two steps: grouped by ids and dates inside (cheap to hash), named outside. */
function keySql(key: GroupKey, day: string): { inner: string; outer: (col: string) => string } {
  const text = (col: string) => col;
  const noneIfEmpty = (col: string) => `CASE WHEN ${col} = '' THEN '${NONE}' ELSE ${col} END`;
  switch (key) {
    case 'project':
      return { inner: 's.project_id', outer: (col) => `${col}::text` }; // named (and ranked for sorting) in JS
    case 'model':
      return { inner: 's.model', outer: text };
    case 'family':
      return { inner: "coalesce(c.family, '-')", outer: text };
    case 'kind':
      return { inner: "coalesce(c.kind, '-')", outer: text };
    case 'day':
      // Sent as days since 1970 and written out in JS (report-cells.ts): to_char cost the database a third
      // of a 9,000-group report's key output (bench/FINDINGS.md).
      return { inner: day, outer: (col) => `(${col} - date '1970-01-01')` };
    case 'week':
      return { inner: `date_trunc('week', ${day})::date`, outer: (col) => `to_char(${col}, 'IYYY-"W"IW')` };
    case 'month':
      return { inner: `date_trunc('month', ${day})::date`, outer: (col) => `to_char(${col}, 'YYYY-MM')` };
    case 'apiKey':
    case 'user':
      return { inner: 's.value', outer: noneIfEmpty };
    default: // tag:<name>: the value after the first '='
      return { inner: "substr(s.value, strpos(s.value, '=') + 1)", outer: text };
  }
}

/**
 * The measures as [roll-up column, output alias]. Counts are summed as PostgreSQL sums an int, to a
 * bigint, and never cast back: a year's tasks can pass 2^31 (common/counts.ts).
 */
const MEASURE_COLUMNS: Record<'base' | Measure, Array<[string, string]>> = {
  base: [
    ['amount', 'amount'],
    ['tasks', 'tasks'],
  ],
  unpriced: [['unpriced_tasks', 'unpriced']],
  tokens: [
    ['input_tokens', 'input'],
    ['output_tokens', 'output'],
    ['cache_read_tokens', 'cache_read'],
    ['cache_write_5m_tokens', 'cw5m'],
    ['cache_write_1h_tokens', 'cw1h'],
    ['cache_write_tokens', 'cw'],
  ],
  media: [
    ['video_seconds', 'seconds'],
    ['images', 'images'],
  ],
};

/** The keys that make every spend_rollup_total row its own group (family and kind follow from model). */
const GRAIN: readonly GroupKey[] = ['project', 'model', 'day'];

type Db = Pick<Database, 'query' | 'queryTexts'>;

export async function spendReport(db: Db, q: ReportQuery): Promise<SpendRow[]> {
  const dimension = checkReportQuery(q);
  const [rows, projects] = await Promise.all([
    readRows(db, q, q.groupBy, dimension),
    q.groupBy.includes('project') ? projectNames(db, q.projectIds) : null,
  ]);
  let report = rows;
  if (untaggedGroup(q, dimension)) {
    // Tasks without the tag: the same groups' totals minus what the tag's values hold.
    const at = q.groupBy.indexOf(`tag:${dimension!.kind === 'tag' ? dimension!.name : ''}`);
    const others = q.groupBy.filter((_, i) => i !== at);
    report = [...rows, ...untagged(rows, await readRows(db, q, others, undefined), at)];
  }
  if (q.groupBy.includes('apiKey')) await nameKeys(db, report, q.groupBy.indexOf('apiKey'));
  if (q.orderBy !== 'amount') return firstGroups(ordered(q.groupBy, report, projects), q.first);
  // Largest first; the database already cut to `first` unless a (none) group was added here.
  const byKeys = ordered(q.groupBy, report, projects);
  const amounts = new Map(byKeys.map((row) => [row, dec(row.amount)]));
  const sorted = byKeys.sort((a, b) => amounts.get(b)!.comparedTo(amounts.get(a)!)); // stable: ties stay by keys
  return q.first === undefined ? sorted : sorted.slice(0, q.first);
}

/** A tag report without a value filter adds a `(none)` group computed from two reads. */
function untaggedGroup(q: ReportQuery, dimension: Dimension | undefined): boolean {
  return dimension?.kind === 'tag' && !!dimension.name && !dimension.values;
}

async function readRows(
  db: Db,
  q: ReportQuery,
  groupBy: GroupKey[],
  dimension: Dimension | undefined,
): Promise<SpendRow[]> {
  const catalog = q.families || q.kinds || groupBy.some((k) => k === 'family' || k === 'kind');
  const measures = new Set(q.measures ?? ALL_MEASURES);
  const columns = (['base', ...ALL_MEASURES] as const)
    .filter((m) => m === 'base' || measures.has(m))
    .flatMap((m) => MEASURE_COLUMNS[m]);
  const users = dimension?.kind === 'user' ? userSource(q, groupBy, columns) : undefined;
  const source = users?.source ?? (dimension ? 'spend_rollup_by' : q.statuses ? 'spend_rollup' : 'spend_rollup_total');
  const day = dimension ? 's.period' : 's.day';
  // Without a status filter or a dimension, grouped at (or below) the total's grain, each row is a
  // group and the database only filters (naming and sorting happen below).
  const perRow = users ? users.perRow : source === 'spend_rollup_total' && GRAIN.every((k) => groupBy.includes(k));
  const keys = groupBy.map((k) => keySql(k, day));
  const inner = keys.map((k, i) => `${k.inner} AS g${i}`);
  const outer = keys.map((k, i) => `${k.outer(`g.g${i}`)} AS k${i}`);
  const days = groupBy.flatMap((k, i) => (k === 'day' ? [i] : []));
  const values = columns.map(([col, alias]) => (perRow ? `s.${col} AS ${alias}` : `sum(s.${col}) AS ${alias}`));
  const dimensionValues = dimension?.values?.map((v) => (v === NONE ? '' : v)) ?? null;
  const tagPrefix = dimension?.kind === 'tag' && dimension.name ? `${dimension.name}=` : null;
  // The top `first` by amount, cut in the database (a month's top 100 of 100,000 users), unless a
  // (none) group is still to be computed from these rows.
  const limited =
    q.orderBy === 'amount' && q.first !== undefined && groupBy === q.groupBy && !untaggedGroup(q, dimension);
  const arrays = await db.queryTexts(
    `SELECT ${[...outer, 'g.unit', ...columns.map(([, alias]) => sentCell(alias))].join(', ')} FROM (
       SELECT ${[...inner, 's.unit', ...values].join(', ')}
       FROM ${source} s
       ${catalog ? `LEFT JOIN (VALUES ${ROUTE_VALUES}) AS c(model, family, kind) ON c.model = s.model` : ''}
       WHERE ${users?.oneMonth ? `${day} = ($1::timestamptz AT TIME ZONE 'UTC')::date AND $2::timestamptz IS NOT NULL` : `${day} >= ($1::timestamptz AT TIME ZONE 'UTC')::date AND ${day} < ($2::timestamptz AT TIME ZONE 'UTC')::date`}
         ${users?.overProjects ? 'AND $3::uuid[] IS NULL' : 'AND ($3::uuid[] IS NULL OR s.project_id = ANY($3))'}
         ${users ? 'AND $4::text[] IS NULL' : 'AND ($4::text[] IS NULL OR s.model = ANY($4))'}
         ${q.families ? 'AND c.family = ANY($5)' : 'AND $5::text[] IS NULL'} ${q.kinds ? 'AND c.kind = ANY($6)' : 'AND $6::text[] IS NULL'}
         ${q.statuses && !dimension ? 'AND s.status = ANY($7)' : 'AND $7::text[] IS NULL'}
         ${users ? "AND $8::text = 'user'" : dimension ? 'AND s.dimension = $8' : 'AND $8::text IS NULL'}
         ${dimension ? 'AND ($9::text[] IS NULL OR s.value = ANY($9)) AND ($10::text IS NULL OR starts_with(s.value, $10))' : 'AND $9::text[] IS NULL AND $10::text IS NULL'}
         AND ($11::"Unit" IS NULL OR s.unit = $11)
       ${perRow ? '' : `GROUP BY ${[...groupBy.map((_, i) => `g${i}`), 's.unit'].join(', ')}`}
     ) g
     ${limited ? `ORDER BY g.amount DESC, ${[...keys.map((k, i) => tieOrder(groupBy[i]!, k.outer(`g.g${i}`), `g.g${i}`)), 'g.unit'].join(', ')} LIMIT ${q.first}` : ''}`,
    [
      q.from,
      q.to,
      q.projectIds ?? null,
      q.models ?? null,
      q.families ?? null,
      q.kinds ?? null,
      q.statuses ?? null,
      dimension?.kind ?? null,
      dimensionValues,
      tagPrefix,
      q.unit ?? null,
    ],
  );
  // Columns: the keys, unit, then the measures in `columns` order, every cell as PostgreSQL's text
  // (exact, never a float; counts become numbers here); a measure not asked for, or sent as NULL
  // for its zero (sentCell), reads as zero.
  const n = groupBy.length;
  const index = new Map(columns.map(([, alias], i) => [alias, n + 1 + i]));
  const [amount, tasks, unpriced, input, output, cacheRead, cw5m, cw1h, cw, seconds, images] = [
    'amount',
    'tasks',
    'unpriced',
    'input',
    'output',
    'cache_read',
    'cw5m',
    'cw1h',
    'cw',
    'seconds',
    'images',
  ].map((alias) => index.get(alias) ?? -1) as number[];
  const text = (r: Array<string | null>, i: number) => (i < 0 ? '0' : (r[i] ?? '0'));
  const count = (r: Array<string | null>, i: number) => (i < 0 ? 0 : Number(r[i]));
  return arrays.map((r) => ({
    keys: keysOf(r, n, days),
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
  }));
}

/** Ties at the cut of a top-N go by keys as the report sorts them: a project by its name. */
function tieOrder(key: GroupKey, outer: string, inner: string): string {
  if (key === 'project') return `(SELECT p.name FROM project p WHERE p.id = ${inner}) COLLATE "C"`;
  return key === 'day' ? inner : `${outer} COLLATE "C"`; // a date sorts as its ISO text does
}

/**
 * Where a user report reads (decisions §7; docs/architecture.md, "Spend by who"): without a
 * project in its groups or filters, spend_rollup_user_all (a named user's month over all
 * projects) beside the tasks without a user summed per month; else spend_rollup_user (per
 * project). `perRow`: every row read is a group already (its top N are its amount index's first
 * entries); `oneMonth`: the range is one calendar month, read by equality so that index applies.
 */
function userSource(q: ReportQuery, groupBy: GroupKey[], columns: Array<[string, string]>) {
  const next = new Date(Date.UTC(q.from.getUTCFullYear(), q.from.getUTCMonth() + 1, 1));
  const oneMonth = q.to.getTime() === next.getTime();
  const overProjects = !groupBy.includes('project') && !q.projectIds;
  const perRow =
    (oneMonth || groupBy.includes('month')) &&
    (overProjects || groupBy.includes('project')) &&
    groupBy.includes('user');
  const cols = columns.map(([col]) => col).join(', ');
  const source = overProjects
    ? `(SELECT period, value, unit, ${cols} FROM spend_rollup_user_all
        UNION ALL
        SELECT period, '' AS value, unit, ${columns.map(([col]) => `sum(${col}) AS ${col}`).join(', ')}
        FROM spend_rollup_user WHERE value = '' GROUP BY period, unit)`
    : 'spend_rollup_user';
  return { source, perRow, oneMonth, overProjects };
}

/** Each row's API key name, found by the prefix in its keys (a few hundred keys at most per report). */
async function nameKeys(db: Pick<Database, 'query'>, rows: SpendRow[], at: number): Promise<void> {
  const prefixes = [...new Set(rows.map((r) => r.keys[at]!))];
  const { rows: names } = await db.query<{ prefix: string; name: string | null }>(
    'SELECT prefix, name FROM api_key WHERE prefix = ANY($1)',
    [prefixes],
  );
  const byPrefix = new Map(names.map((n) => [n.prefix, n.name]));
  for (const row of rows) row.apiKeyName = byPrefix.get(row.keys[at]!) ?? null;
}

/**
 * The reported projects' names (all, or those the report is scoped to) and their places in byte
 * order of names: ranks within a subset sort the same as ranks among all projects.
 */
async function projectNames(
  db: Pick<Database, 'query'>,
  scope: readonly string[] | undefined,
): Promise<Map<string, { name: string; sortKey: string }>> {
  const { rows } = await db.query<{ id: string; name: string }>(
    'SELECT id::text AS id, name FROM project WHERE $1::uuid[] IS NULL OR id = ANY($1) ORDER BY name COLLATE "C"',
    [scope ?? null],
  );
  // The rank, zero-padded, sorts as text like the names do in byte order.
  return new Map(rows.map((r, rank) => [r.id, { name: r.name, sortKey: String(rank).padStart(10, '0') }]));
}
