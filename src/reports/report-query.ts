/**
 * What a spend report may ask (ReportQuery) and the check of it: every field named when it is
 * wrong, filters bounded and free of control characters, one attribution dimension at a time.
 * spend-report.ts runs a checked query.
 */
import type { Unit } from '../pricing/money.js';
import { ApiError } from '../common/api-error.js';
import { isUuid } from '../common/ids.js';
import { hasControl } from '../common/text.js';

/** At most this many values in one filter (a URL or a GraphQL list of 100,000 users is not a question). */
const MAX_FILTER_VALUES = 1_000;

export const GROUP_KEYS = ['project', 'model', 'family', 'kind', 'day', 'week', 'month', 'apiKey', 'user'] as const;
type NamedKey = (typeof GROUP_KEYS)[number];
/** A named key, or `tag:<name>`: the values of one tag. */
export type GroupKey = NamedKey | `tag:${string}`;
/** prior_period: movements of a closed month's tasks, posted in a later month (decisions §13). */
export const REPORT_STATUSES = ['ready', 'failed', 'adjustment', 'resolved', 'prior_period'] as const;
/** The group of tasks without a key, a user, or the tag grouped by. */
export const NONE = '(none)';

/** A measure that was not asked for reads as zero. */
export interface SpendRow {
  keys: string[];
  unit: Unit;
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
  /** Grouped by apiKey: the key's name (set when it was issued), beside its prefix in `keys`. */
  apiKeyName?: string | null;
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
  /** Key prefixes (`(none)`: tasks without a key). */
  apiKeys?: string[];
  /** End users (`(none)`: tasks without one). */
  users?: string[];
  /** "name=value" pairs. */
  tags?: string[];
  /** Only rows of this unit (ordering by amount needs one: credits and USD are never compared). */
  unit?: Unit;
  /** `keys` (the default): by the grouping keys; `amount`: the largest spend first, ties by keys. */
  orderBy?: 'keys' | 'amount';
  /** At most this many groups, after ordering (1 to 10,000): a month's top 100 users. */
  first?: number;
}

export const MAX_FIRST = 10_000;

export type Dimension =
  { kind: 'apiKey' | 'user'; values?: string[] } | { kind: 'tag'; name?: string; values?: string[] };

export const TAG_KEY = /^tag:([a-z0-9_.-]{1,64})$/;
export const DAY = 86_400_000;

/** Checks a report query, says which field is wrong, and returns its attribution dimension, if any. */
export function checkReportQuery(q: ReportQuery): Dimension | undefined {
  for (const [field, value] of [
    ['from', q.from],
    ['to', q.to],
  ] as const) {
    if (!(value instanceof Date) || Number.isNaN(value.getTime()))
      throw ApiError.badRequest(`${field}: must be a date-time`);
    if (value.getTime() % DAY !== 0)
      throw ApiError.badRequest(
        `${field}: must be a UTC midnight (reports are kept per UTC day), e.g. 2026-11-01T00:00:00Z`,
      );
  }
  if (q.to <= q.from) throw ApiError.badRequest('to: must be after from');
  // Filter values are names (models, keys, users, tags): never a control character or a NUL,
  // which PostgreSQL's text cannot even hold (it answered 500).
  for (const field of ['groupBy', 'models', 'families', 'kinds', 'statuses', 'apiKeys', 'users', 'tags'] as const) {
    const values = q[field];
    if (values === undefined) continue;
    if (values.length > MAX_FILTER_VALUES) throw ApiError.badRequest(`${field}: at most ${MAX_FILTER_VALUES} values`);
    for (const value of values) {
      if (typeof value !== 'string' || value.length > 256)
        throw ApiError.badRequest(`${field}: each value is a name of at most 256 characters`);
      if (hasControl(value)) throw ApiError.badRequest(`${field}: must not contain control characters`);
    }
  }
  if (q.unit !== undefined && q.unit !== 'USD' && q.unit !== 'CREDITS')
    throw ApiError.badRequest('unit: is USD or CREDITS');
  if (q.orderBy !== undefined && q.orderBy !== 'keys' && q.orderBy !== 'amount')
    throw ApiError.badRequest('orderBy: is keys or amount');
  if (q.orderBy === 'amount' && !q.unit)
    throw ApiError.badRequest(
      'orderBy: amount compares amounts of one unit: give unit (USD or CREDITS); credits and USD are never compared',
    );
  if (q.first !== undefined && !(Number.isInteger(q.first) && q.first >= 1 && q.first <= MAX_FIRST))
    throw ApiError.badRequest(`first: must be a whole number from 1 to ${MAX_FIRST}`);
  const badKey = q.groupBy.find((k) => !(GROUP_KEYS as readonly string[]).includes(k) && !TAG_KEY.test(k));
  if (badKey)
    throw ApiError.badRequest(
      `groupBy: "${String(badKey).slice(0, 70)}" is not one of ${GROUP_KEYS.join(', ')}, tag:<name>`,
    );
  if (new Set(q.groupBy).size !== q.groupBy.length) throw ApiError.badRequest('groupBy: a key is repeated');
  const badProject = q.projectIds?.find((id) => !isUuid(id));
  if (badProject) throw ApiError.badRequest(`projectIds: "${badProject.slice(0, 40)}" is not a project id`);
  const badStatus = q.statuses?.find((s) => !(REPORT_STATUSES as readonly string[]).includes(s));
  if (badStatus) throw ApiError.badRequest(`statuses: "${badStatus}" is not one of ${REPORT_STATUSES.join(', ')}`);

  const dimensions = new Map<string, Dimension>();
  for (const key of q.groupBy) {
    if (key === 'apiKey' || key === 'user') dimensions.set(key, { kind: key });
    const tag = TAG_KEY.exec(key)?.[1];
    if (tag) dimensions.set(`tag:${tag}`, { kind: 'tag', name: tag });
  }
  const filters: Array<[string, 'apiKey' | 'user' | 'tag', string[] | undefined]> = [
    ['apiKeys', 'apiKey', q.apiKeys],
    ['users', 'user', q.users],
    ['tags', 'tag', q.tags],
  ];
  for (const [, kind, values] of filters) {
    if (!values) continue;
    if (kind === 'tag') {
      const names = new Set(values.map((v) => v.split('=')[0]));
      if (values.some((v) => !/^[a-z0-9_.-]{1,64}=./.test(v))) throw ApiError.badRequest('tags: each is name=value');
      // A task has one value per tag name, so values of one name never count a task twice.
      if (names.size > 1) throw ApiError.badRequest('tags: filter by values of one tag name at a time');
      const grouped = [...dimensions.values()].find((d) => d.kind === 'tag');
      if (grouped && (names.size > 1 || !names.has((grouped as { name?: string }).name ?? ''))) {
        throw ApiError.badRequest('tags: when grouping by tag:<name>, filter only by values of that tag');
      }
      if (grouped) (grouped as { values?: string[] }).values = values;
      else dimensions.set('tags', { kind: 'tag', values });
    } else {
      const existing = dimensions.get(kind);
      if (existing) (existing as { values?: string[] }).values = values;
      else dimensions.set(kind, { kind, values });
    }
  }
  if (dimensions.size > 1) {
    throw ApiError.badRequest(
      `groupBy: one of apiKey, user, tag:<name> at a time (with their filters): spend is rolled up per key, per user and per tag, not per combination`,
    );
  }
  const dimension = [...dimensions.values()][0];
  if (dimension && q.statuses)
    throw ApiError.badRequest('statuses: not with apiKey, user or tag reports (they add up every outcome)');
  if (dimension?.kind === 'user') {
    if (q.groupBy.includes('day') || q.groupBy.includes('week'))
      throw ApiError.badRequest('groupBy: user reports are kept per month: group by month, not day or week');
    const perModel = q.groupBy.find((k) => k === 'model' || k === 'family' || k === 'kind');
    if (perModel)
      throw ApiError.badRequest(`groupBy: user reports are kept per project and month, not per ${perModel}`);
    if (q.models || q.families || q.kinds)
      throw ApiError.badRequest(
        `${q.models ? 'models' : q.families ? 'families' : 'kinds'}: user reports are kept per project and month, not per model`,
      );
    for (const [field, value] of [
      ['from', q.from],
      ['to', q.to],
    ] as const) {
      if (value.getUTCDate() !== 1)
        throw ApiError.badRequest(
          `${field}: user reports are kept per month: ${field} must be the first of a month (UTC)`,
        );
    }
  }
  return dimension;
}
