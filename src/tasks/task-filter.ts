/**
 * Which tasks a GraphQL task filter names, as SQL over `task t` (only the conditions given, so each
 * query is planned for what it asks: the review queue from its partial index, a project's days from
 * (project_id, accepted_at)), and the totals of money posted in a range, as spendReport counts it.
 */
export interface TaskFilter {
  projectIds?: string[];
  models?: string[];
  statuses?: string[];
  needsReview?: boolean;
  from?: Date;
  to?: Date;
  /** key prefixes; `(none)`: tasks without a key */
  apiKeys?: string[];
  /** end users; `(none)`: tasks without one */
  users?: string[];
  /** name=value: tasks carrying any of them */
  tags?: string[];
  /** true: only tasks with a charge, false: only tasks without */
  charged?: boolean;
  /**
   * Money posted in [postedFrom, postedTo): the tasks whose settlement, or an adjustment of which,
   * was posted in it. This is what a spendReport row over that range counts (decisions §13: a late
   * movement of a closed month's task is posted in the first open month), so a bar and its
   * drill-down agree (decisions §9, §13).
   */
  postedFrom?: Date;
  postedTo?: Date;
}

/**
 * A task a bar counts once its settlement is posted: settled, not refused by the vendor (a refused
 * task never ran: its hold is released whole and no roll-up counts it, decisions §4).
 */
const SETTLED = `(t.settled_at IS NOT NULL AND t.status <> 'rejected')`;

/**
 * The filter's conditions and their values from $1 on; shared by the list and its totals. With a
 * posted range, `posted` names its two placeholders.
 */
export function filterSql(filter: TaskFilter): {
  where: string;
  values: unknown[];
  posted?: { from: string; to: string };
} {
  const values: unknown[] = [];
  const where: string[] = [];
  const param = (value: unknown) => {
    values.push(value);
    return `$${values.length}`;
  };
  const add = (sql: (n: string) => string, value: unknown) => where.push(sql(param(value)));
  if (filter.projectIds) add((n) => `t.project_id = ANY(${n}::uuid[])`, filter.projectIds);
  if (filter.models) add((n) => `t.model = ANY(${n}::text[])`, filter.models);
  if (filter.statuses) add((n) => `t.status::text = ANY(${n}::text[])`, filter.statuses);
  if (filter.from) add((n) => `t.accepted_at >= ${n}`, filter.from);
  if (filter.to) add((n) => `t.accepted_at < ${n}`, filter.to);
  if (filter.apiKeys)
    add(
      (n) => `coalesce((SELECT k.prefix FROM api_key k WHERE k.id = t.api_key_id), '(none)') = ANY(${n}::text[])`,
      filter.apiKeys,
    );
  if (filter.users) add((n) => `coalesce(t.end_user, '(none)') = ANY(${n}::text[])`, filter.users);
  if (filter.tags) add((n) => `t.tags && ${n}::text[]`, filter.tags);
  if (filter.needsReview !== undefined && filter.needsReview !== null)
    where.push(filter.needsReview ? 't.needs_review' : 'NOT t.needs_review');
  if (filter.charged !== undefined && filter.charged !== null)
    where.push(filter.charged ? 't.charge_amount IS NOT NULL' : 't.charge_amount IS NULL');
  if (!filter.postedFrom || !filter.postedTo) return { where: where.length ? where.join(' AND ') : 'TRUE', values };
  // From the ledger's (project, unit, effective_at) index: the entries posted in the range.
  const projects = filter.projectIds ? `${param(filter.projectIds)}::uuid[]` : 'ARRAY(SELECT id FROM project)';
  const [from, to] = [param(filter.postedFrom), param(filter.postedTo)];
  where.push(
    `t.id IN (SELECT e.task_id FROM ledger_entry e WHERE e.project_id = ANY(${projects}) AND e.unit = ANY('{USD,CREDITS}'::"Unit"[])
                AND e.effective_at >= ${from} AND e.effective_at < ${to} AND e.kind IN ('charge', 'release', 'adjustment') AND e.task_id IS NOT NULL)
     AND (${SETTLED} OR EXISTS (SELECT 1 FROM ledger_entry x WHERE x.task_id = t.id AND x.kind = 'adjustment'))`,
  );
  return { where: where.join(' AND '), values, posted: { from, to } };
}

/** A filter that names projects at most (what an adjustment with no task can be attributed to). */
export function onlyProjects(filter: TaskFilter): boolean {
  return (
    !filter.models &&
    !filter.statuses &&
    !filter.apiKeys &&
    !filter.users &&
    !filter.tags &&
    !filter.from &&
    !filter.to &&
    (filter.needsReview === undefined || filter.needsReview === null) &&
    (filter.charged === undefined || filter.charged === null)
  );
}

/**
 * Totals of money posted in the range, as spendReport counts it: tasks whose settlement was posted
 * in it (the settlement's entries are its latest charge or release), and every charge and
 * adjustment posted in it, per unit.
 */
export function postedTotalsSql(where: string, from: string, to: string): string {
  return `WITH m AS (SELECT t.id, t.unit, ${SETTLED} AS settled FROM task t WHERE ${where}),
    e AS (SELECT e.task_id, e.kind, e.amount, e.effective_at FROM ledger_entry e JOIN m ON m.id = e.task_id WHERE e.kind IN ('charge', 'release', 'adjustment')),
    per_task AS (
      SELECT m.unit, m.settled AND s.at >= ${from} AND s.at < ${to} AS counted,
             (SELECT sum(x.amount) FROM e x WHERE x.task_id = m.id AND x.kind IN ('charge', 'adjustment') AND x.effective_at >= ${from} AND x.effective_at < ${to}) AS amount
      FROM m CROSS JOIN LATERAL (SELECT max(x.effective_at) AS at FROM e x WHERE x.task_id = m.id AND x.kind IN ('charge', 'release')) s)
    SELECT unit, count(*) FILTER (WHERE counted)::int AS tasks, coalesce(sum(amount), 0)::text AS amount FROM per_task GROUP BY ROLLUP (unit) ORDER BY unit NULLS FIRST`;
}
