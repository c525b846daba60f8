/** Reads a task with its estimate, charge lines and ledger entries, for GraphQL (on the read bulkhead). */
import { Inject, Injectable } from '@nestjs/common';
import { ApiError } from '../common/api-error.js';
import { bigintId, parseTaskRef } from '../common/ids.js';
import { archivedMonthIn, archivedMonthOf, archivedRange, archivedTask, projectOfTask } from './archived-tasks.js';
import { Database, READS_DATABASE } from '../database/database.js';
import { dec, type AmountText } from '../pricing/money.js';
import type { Exactness, Unit } from '../pricing/pricing.types.js';
import { filterSql, onlyProjects, postedTotalsSql, type TaskFilter } from './task-filter.js';
import type { TaskView } from './task-view.js';

export type { TaskFilter } from './task-filter.js';
export type { ChargeView, TaskView } from './task-view.js';

export const MAX_PAGE = 200;

interface TaskRow {
  id: string;
  upstream_task_id: string | null;
  project_id: string;
  api_key_prefix: string | null;
  end_user: string | null;
  tags: string[] | null;
  model: string;
  kind: string;
  status: string;
  accepted_at: Date;
  settled_at: Date | null;
  price_book_version: number;
  exactness: Exactness;
  unit: Unit;
  hold_amount: string;
  estimate_amount: string;
  estimate_tier: string | null;
  estimate_warnings: string[];
  charge_amount: string | null;
  charge_exactness: Exactness | null;
  charge_tier: string | null;
  charge_warnings: string[];
  needs_review: boolean;
  review_reason: string | null;
  overrun: string | null;
  resolution: 'CHARGE' | 'RELEASE' | null;
  resolution_reason: string | null;
  resolved_at: Date | null;
}

interface LineRow {
  task_id: string;
  stage: 'estimate' | 'charge';
  component: string;
  quantity: string;
  rate: string;
  per: string;
  amount: string;
  list_rate: string | null;
  list_amount: string | null;
}

interface EntryRow {
  id: string;
  task_id: string;
  kind: string;
  unit: Unit;
  amount: string;
  effective_at: Date;
  created_at: Date;
  reason: string | null;
}

// Every column is qualified and renamed where it is cast: ORDER BY must bind to t.id (bigint),
// never to an output column `id` of type text (which sorted 10 before 2 and lost tasks in paging).
const COLUMNS = `t.id::text AS id, t.upstream_task_id::text AS upstream_task_id, t.project_id,
  (SELECT k.prefix FROM api_key k WHERE k.id = t.api_key_id) AS api_key_prefix, t.end_user, t.tags, t.model, t.kind, t.status,
  t.accepted_at, t.settled_at, t.price_book_version, t.exactness, t.unit, t.hold_amount::text AS hold_amount,
  t.estimate_amount::text AS estimate_amount, t.estimate_tier, t.estimate_warnings, t.charge_amount::text AS charge_amount,
  t.charge_exactness, t.charge_tier, t.charge_warnings, t.needs_review, t.review_reason, t.overrun::text AS overrun,
  t.resolution, t.resolution_reason, t.resolved_at`;

/**
 * The task a reference names ($1 the number, $2 whether it is the gateway's own `gw-<n>`): the vendor's
 * id goes through task_upstream, unique across every month's partition (decisions §18). Either way
 * the partition is found from the id, at the query's start.
 */
const ID_OF_REF = `CASE WHEN $2::boolean THEN $1::bigint ELSE (SELECT u.task_id FROM task_upstream u WHERE u.upstream_task_id = $1::bigint) END`;
const refParams = (ref: { upstreamTaskId: string } | { internalId: string }) =>
  'internalId' in ref ? [ref.internalId, true] : [ref.upstreamTaskId, false];

@Injectable()
export class TaskReadsService {
  constructor(@Inject(READS_DATABASE) private readonly db: Database) {}

  /**
   * What the vendor would bill between two instants: settled tasks it numbered, with a charge (the simulator's
   * statement).
   */
  async billedBetween(
    from: Date,
    to: Date,
  ): Promise<Array<{ id: string; model: string; at: Date; unit: Unit; amount: string }>> {
    const { rows } = await this.db.query<{ id: string; model: string; at: Date; unit: Unit; amount: string }>(
      `SELECT upstream_task_id::text AS id, model, accepted_at AS at, unit::text, charge_amount::text AS amount FROM task
       WHERE upstream_task_id IS NOT NULL AND settled_at IS NOT NULL AND charge_amount <> 0 AND accepted_at >= $1 AND accepted_at < $2 ORDER BY accepted_at, id`,
      [from, to],
    );
    return rows;
  }

  /** A task's project (the guard's look-up; null: of every project), or undefined when there is no such task. */
  async projectOf(taskId: string): Promise<string | null | undefined> {
    const ref = parseTaskRef(taskId);
    return ref ? projectOfTask(this.db, ref) : undefined;
  }

  /** A range over an archived month is refused, not answered short (archived-tasks.ts). */
  private async refuseArchived(filter: TaskFilter): Promise<void> {
    const month =
      (await archivedMonthIn(this.db, filter.from, filter.to)) ??
      (await archivedMonthIn(this.db, filter.postedFrom, filter.postedTo));
    if (month) throw archivedRange(month);
  }

  /** For a task not found: the refusal that says its month is archived, when it is, among the projects given. */
  async refuseIfArchived(taskId: string, projectIds: string[] | undefined): Promise<void> {
    const ref = parseTaskRef(taskId);
    const month = ref ? await archivedMonthOf(this.db, ref, projectIds) : undefined;
    if (month) throw archivedTask(taskId, month);
  }

  /** By the upstream taskId, or `gw-<n>` for a task the upstream never numbered; undefined for anything else. */
  async find(taskId: string): Promise<TaskView | undefined> {
    const ref = parseTaskRef(taskId);
    if (!ref) return undefined;
    const { rows } = await this.db.query<TaskRow>(
      `SELECT ${COLUMNS} FROM task t WHERE t.id = ${ID_OF_REF}`,
      refParams(ref),
    );
    return (await this.hydrate(rows))[0];
  }

  /** Newest first; `after` is the cursor of the last task of the previous page. */
  async list(filter: TaskFilter, first: number, after?: string): Promise<{ tasks: TaskView[]; hasNextPage: boolean }> {
    await this.refuseArchived(filter);
    const afterId = after === undefined ? null : decodeCursor(after);
    const { where, values } = filterSql(filter);
    const { rows } = await this.db.query<TaskRow>(
      `SELECT ${COLUMNS} FROM task t WHERE ${where} AND ($${values.length + 1}::bigint IS NULL OR t.id < $${values.length + 1}) ORDER BY t.id DESC LIMIT $${values.length + 2}`,
      [...values, afterId, first + 1],
    );
    const tasks = await this.hydrate(rows.slice(0, first));
    return { tasks, hasNextPage: rows.length > first };
  }

  /**
   * How many tasks match and what they were charged, per unit (a task's charge, not its
   * adjustments); with postedFrom/postedTo, the money posted in that range as spendReport counts it
   * (settlements and adjustments, by when they were posted).
   */
  async totals(filter: TaskFilter): Promise<{
    tasks: number;
    totals: AmountText[];
    withoutTask: AmountText[];
  }> {
    await this.refuseArchived(filter);
    const { where, values, posted } = filterSql(filter);
    const { rows } = await this.db.query<{ unit: Unit | null; tasks: number; amount: string | null }>(
      posted
        ? postedTotalsSql(where, posted.from, posted.to)
        : `SELECT t.unit, count(*)::int AS tasks, sum(t.charge_amount)::text AS amount FROM task t WHERE ${where} GROUP BY ROLLUP (t.unit) ORDER BY t.unit NULLS FIRST`,
      values,
    );
    return {
      tasks: rows.find((r) => r.unit === null)?.tasks ?? 0,
      // PostgreSQL's own text of the sum, as spendReport answers it (the same digits for the same amount).
      totals: rows
        .filter((r) => r.unit !== null && r.amount !== null)
        .map((r) => ({ unit: r.unit!, amount: r.amount! })),
      withoutTask: posted && onlyProjects(filter) ? await this.adjustmentsWithoutTask(filter) : [],
    };
  }

  /**
   * Adjustments posted in the range that belong to no task, per unit: a project's report row counts
   * them (as "(adjustment)"), so its drill-down names them beside the tasks' money.
   */
  private async adjustmentsWithoutTask(filter: TaskFilter): Promise<AmountText[]> {
    const { rows } = await this.db.query<AmountText>(
      `SELECT unit, sum(amount)::text AS amount FROM ledger_entry
       WHERE project_id = ANY(coalesce($1::uuid[], ARRAY(SELECT id FROM project))) AND unit = ANY('{USD,CREDITS}'::"Unit"[])
         AND effective_at >= $2 AND effective_at < $3 AND kind = 'adjustment' AND task_id IS NULL
       GROUP BY unit ORDER BY unit`,
      [filter.projectIds ?? null, filter.postedFrom, filter.postedTo],
    );
    return rows;
  }

  /** Adds estimate and charge lines (task_line) and ledger entries to task rows: two queries for the whole page. */
  private async hydrate(rows: TaskRow[]): Promise<TaskView[]> {
    if (rows.length === 0) return [];
    const ids = rows.map((t) => t.id);
    const [lines, entries] = await Promise.all([
      this.db.query<LineRow>(
        `SELECT task_id::text, stage, component, quantity::text, rate::text, per::text, amount::text, list_rate::text, list_amount::text FROM task_line WHERE task_id = ANY($1::bigint[]) ORDER BY task_id, stage, seq`,
        [ids],
      ),
      this.db.query<EntryRow>(
        `SELECT e.id::text AS id, e.task_id::text AS task_id, e.kind, e.unit, e.amount::text AS amount, e.effective_at, e.created_at, e.reason FROM ledger_entry e WHERE e.task_id = ANY($1::bigint[]) ORDER BY e.id`,
        [ids],
      ),
    ]);
    const linesByTask = groupBy(lines.rows, (l) => l.task_id);
    const entriesByTask = groupBy(entries.rows, (e) => e.task_id);
    return rows.map((t) => {
      const own = linesByTask.get(t.id) ?? [];
      const linesOf = (stage: LineRow['stage']) =>
        own
          .filter((l) => l.stage === stage)
          .map((l) => ({
            component: l.component,
            quantity: dec(l.quantity),
            rate: dec(l.rate),
            per: dec(l.per),
            amount: dec(l.amount),
            ...(l.list_rate === null ? {} : { listRate: dec(l.list_rate), listAmount: dec(l.list_amount!) }),
          }));
      const ownEntries = entriesByTask.get(t.id) ?? [];
      const released = ownEntries.some((e) => e.kind === 'release');
      const adjustments = ownEntries
        .filter((e) => e.kind === 'adjustment')
        .reduce((sum, e) => sum.plus(dec(e.amount)), dec(0));
      return {
        taskId: t.upstream_task_id ?? `gw-${t.id}`,
        internalId: t.id,
        projectId: t.project_id,
        apiKeyPrefix: t.api_key_prefix,
        user: t.end_user,
        tags: t.tags ?? [],
        model: t.model,
        kind: t.kind,
        status: t.status,
        acceptedAt: t.accepted_at,
        settledAt: t.settled_at,
        priceBookVersion: t.price_book_version,
        exactness: t.exactness,
        unit: t.unit,
        held: released || t.settled_at ? dec(0) : dec(t.hold_amount),
        needsReview: t.needs_review,
        reviewReason: t.review_reason,
        overrun: t.overrun === null ? null : dec(t.overrun),
        resolution:
          t.resolution && t.resolved_at
            ? { outcome: t.resolution, reason: t.resolution_reason ?? '', resolvedAt: t.resolved_at }
            : null,
        estimate: {
          unit: t.unit,
          amount: dec(t.estimate_amount),
          exactness: t.exactness,
          tier: t.estimate_tier,
          lines: linesOf('estimate'),
          warnings: t.estimate_warnings,
        },
        charge:
          t.charge_amount === null
            ? null
            : {
                unit: t.unit,
                amount: dec(t.charge_amount),
                exactness: t.charge_exactness ?? t.exactness,
                tier: t.charge_tier,
                lines: linesOf('charge'),
                warnings: t.charge_warnings,
              },
        adjustments,
        net: t.charge_amount === null ? null : dec(t.charge_amount).plus(adjustments),
        ledgerEntries: ownEntries.map((e) => ({
          id: e.id,
          kind: e.kind,
          unit: e.unit,
          amount: dec(e.amount),
          effectiveAt: e.effective_at,
          createdAt: e.created_at,
          reason: e.reason,
        })),
      };
    });
  }
}

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = groups.get(k);
    if (list) list.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}

export function encodeCursor(internalId: string): string {
  return Buffer.from(`task:${internalId}`).toString('base64url');
}

function decodeCursor(cursor: string): string {
  const match = /^task:(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString());
  const id = match ? bigintId(match[1]!) : undefined;
  if (!id) throw ApiError.badRequest('after: not a cursor from this API');
  return id;
}
