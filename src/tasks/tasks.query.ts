/** Reads a task with its estimate, charge lines and ledger entries, for GraphQL. */
import { Inject, Injectable } from '@nestjs/common';
import { Database, DATABASE } from '../database/database.js';
import { ApiError } from '../common/api-error.js';
import { dec, type Decimal } from '../pricing/money.js';

export interface TaskView {
  taskId: string;
  internalId: string;
  projectId: string;
  model: string;
  kind: string;
  status: string;
  acceptedAt: Date;
  settledAt: Date | null;
  priceBookVersion: number;
  exactness: 'EXACT' | 'ESTIMATE' | 'UNPRICED';
  unit: 'CREDITS' | 'USD';
  held: Decimal;
  needsReview: boolean;
  reviewReason: string | null;
  estimate: ChargeView;
  charge: ChargeView | null;
  ledgerEntries: Array<{ id: string; kind: string; unit: 'CREDITS' | 'USD'; amount: Decimal; effectiveAt: Date; createdAt: Date; reason: string | null }>;
}

export interface ChargeView {
  unit: 'CREDITS' | 'USD';
  amount: Decimal;
  exactness: 'EXACT' | 'ESTIMATE' | 'UNPRICED';
  tier: string | null;
  lines: Array<{ component: string; quantity: Decimal; rate: Decimal; per: Decimal; amount: Decimal }>;
  warnings: string[];
}

export interface TaskFilter {
  projectIds?: string[];
  models?: string[];
  statuses?: string[];
  needsReview?: boolean;
  from?: Date;
  to?: Date;
}

export const MAX_PAGE = 200;

const COLUMNS = `id::text, upstream_task_id::text, project_id, model, kind, status, accepted_at, settled_at, price_book_version,
  exactness, unit, hold_amount::text, estimate_amount::text, estimate_tier, estimate_warnings,
  charge_amount::text, charge_exactness, charge_tier, charge_warnings, needs_review, review_reason`;

@Injectable()
export class TasksQuery {
  constructor(@Inject(DATABASE) private readonly db: Database) {}

  /** By the upstream taskId, or `gw-<n>` for a task the upstream never numbered. */
  async find(taskId: string): Promise<TaskView | undefined> {
    const internal = /^gw-(\d{1,19})$/.exec(taskId)?.[1];
    if (!internal && !/^\d{1,19}$/.test(taskId)) return undefined;
    const { rows } = await this.db.query(`SELECT ${COLUMNS} FROM task WHERE ${internal ? 'id' : 'upstream_task_id'} = $1`, [internal ?? taskId]);
    return (await this.hydrate(rows))[0];
  }

  /** Newest first; `after` is the cursor of the last task of the previous page. */
  async list(filter: TaskFilter, first: number, after?: string): Promise<{ tasks: TaskView[]; hasNextPage: boolean }> {
    const afterId = after === undefined ? null : decodeCursor(after);
    const { rows } = await this.db.query(
      `SELECT ${COLUMNS} FROM task
       WHERE ($1::uuid[] IS NULL OR project_id = ANY($1)) AND ($2::text[] IS NULL OR model = ANY($2))
         AND ($3::text[] IS NULL OR status::text = ANY($3)) AND ($4::boolean IS NULL OR needs_review = $4)
         AND ($5::timestamptz IS NULL OR accepted_at >= $5) AND ($6::timestamptz IS NULL OR accepted_at < $6)
         AND ($7::bigint IS NULL OR id < $7)
       ORDER BY id DESC LIMIT $8`,
      [filter.projectIds ?? null, filter.models ?? null, filter.statuses ?? null, filter.needsReview ?? null, filter.from ?? null, filter.to ?? null, afterId, first + 1],
    );
    const tasks = await this.hydrate(rows.slice(0, first));
    return { tasks, hasNextPage: rows.length > first };
  }

  /** Adds estimate and charge lines (task_line) and ledger entries to task rows: two queries for the whole page. */
  private async hydrate(rows: Record<string, any>[]): Promise<TaskView[]> {
    if (rows.length === 0) return [];
    const ids = rows.map((t) => t.id);
    const [lines, entries] = await Promise.all([
      this.db.query(`SELECT task_id::text, stage, component, quantity::text, rate::text, per::text, amount::text FROM task_line WHERE task_id = ANY($1::bigint[]) ORDER BY task_id, stage, seq`, [ids]),
      this.db.query(`SELECT id::text, task_id::text, kind, unit, amount::text, effective_at, created_at, reason FROM ledger_entry WHERE task_id = ANY($1::bigint[]) ORDER BY id`, [ids]),
    ]);
    return rows.map((t) => {
      const linesOf = (stage: string) =>
        lines.rows
          .filter((l) => l.task_id === t.id && l.stage === stage)
          .map((l) => ({ component: l.component, quantity: dec(l.quantity), rate: dec(l.rate), per: dec(l.per), amount: dec(l.amount) }));
      const own = entries.rows.filter((e) => e.task_id === t.id);
      const released = own.some((e) => e.kind === 'release');
      return {
        taskId: t.upstream_task_id ?? `gw-${t.id}`,
        internalId: t.id,
        projectId: t.project_id,
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
        estimate: { unit: t.unit, amount: dec(t.estimate_amount), exactness: t.exactness, tier: t.estimate_tier, lines: linesOf('estimate'), warnings: t.estimate_warnings },
        charge:
          t.charge_amount === null
            ? null
            : { unit: t.unit, amount: dec(t.charge_amount), exactness: t.charge_exactness ?? t.exactness, tier: t.charge_tier, lines: linesOf('charge'), warnings: t.charge_warnings },
        ledgerEntries: own.map((e) => ({ id: e.id, kind: e.kind, unit: e.unit, amount: dec(e.amount), effectiveAt: e.effective_at, createdAt: e.created_at, reason: e.reason })),
      };
    });
  }
}

export function encodeCursor(internalId: string): string {
  return Buffer.from(`task:${internalId}`).toString('base64url');
}

function decodeCursor(cursor: string): string {
  const match = /^task:(\d{1,19})$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (!match) throw ApiError.badRequest('after: not a cursor from this API');
  return match[1]!;
}
