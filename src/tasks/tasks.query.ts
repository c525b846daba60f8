/** Reads a task with its estimate, charge lines and ledger entries, for GraphQL. */
import { Inject, Injectable } from '@nestjs/common';
import { Database, DATABASE } from '../database/database.js';
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

@Injectable()
export class TasksQuery {
  constructor(@Inject(DATABASE) private readonly db: Database) {}

  /** By the upstream taskId, or `gw-<n>` for a task the upstream never numbered. */
  async find(taskId: string): Promise<TaskView | undefined> {
    const internal = /^gw-(\d{1,19})$/.exec(taskId)?.[1];
    if (!internal && !/^\d{1,19}$/.test(taskId)) return undefined;
    const { rows } = await this.db.query(
      `SELECT id::text, upstream_task_id::text, project_id, model, kind, status, accepted_at, settled_at, price_book_version,
              exactness, unit, hold_amount::text, estimate_amount::text, estimate_tier, estimate_warnings,
              charge_amount::text, charge_exactness, charge_tier, charge_warnings, needs_review, review_reason
       FROM task WHERE ${internal ? 'id' : 'upstream_task_id'} = $1`,
      [internal ?? taskId],
    );
    const t = rows[0];
    if (!t) return undefined;
    const [lines, entries] = await Promise.all([
      this.db.query(
        `SELECT stage, component, quantity::text, rate::text, per::text, amount::text FROM charge_line WHERE task_id = $1 ORDER BY stage, seq`,
        [t.id],
      ),
      this.db.query(
        `SELECT id::text, kind, unit, amount::text, effective_at, created_at, reason FROM ledger_entry WHERE task_id = $1 ORDER BY id`,
        [t.id],
      ),
    ]);
    const linesOf = (stage: string) =>
      lines.rows
        .filter((l) => l.stage === stage)
        .map((l) => ({ component: l.component, quantity: dec(l.quantity), rate: dec(l.rate), per: dec(l.per), amount: dec(l.amount) }));
    const released = entries.rows.some((e) => e.kind === 'release');
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
      ledgerEntries: entries.rows.map((e) => ({ id: e.id, kind: e.kind, unit: e.unit, amount: dec(e.amount), effectiveAt: e.effective_at, createdAt: e.created_at, reason: e.reason })),
    };
  }
}
