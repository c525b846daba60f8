/**
 * Where budgets stand, in their current period window: pure reads on the read pool (no project
 * lock: holds never wait for them). A window nobody has touched yet reads what the ledger holds
 * for it, which is what its row would start from. An EACH_USER budget reports the user nearest its
 * limit, and lists every user's own balance page by page.
 */
import { Inject, Injectable } from '@nestjs/common';
import { ApiError } from '../common/api-error.js';
import { Database, READS_DATABASE } from '../database/database.js';
import { dec, Decimal as DecimalCtor, percent, type Decimal } from '../pricing/money.js';
import type { Unit } from '../pricing/pricing.types.js';
import type { BudgetScope, ModelScope, Period } from './budgets.service.js';

export interface BudgetStatus {
  budgetId: string;
  projectId: string;
  unit: Unit;
  period: Period;
  hard: boolean;
  scope: BudgetScope;
  /** API_KEY: the key's prefix; TAG: "name=value"; USER: the user; otherwise null. */
  scopeValue: string | null;
  modelScope: ModelScope | null;
  modelValue: string | null;
  /** EACH_USER: the user whose balance is reported (the one nearest the limit); null otherwise or before any use. */
  user: string | null;
  /** EACH_USER: how many users have a balance in this window. */
  users: number;
  limit: Decimal;
  spent: Decimal;
  held: Decimal;
  /** Of held: the holds of tasks under review (unknown outcome, in flight past their review age). */
  heldUnderReview: Decimal;
  /** limit − spent − held; negative when settled charges ran past the limit. */
  remaining: Decimal;
  thresholds: number[];
  periodStart: Date;
  periodEnd: Date;
  /** Display: half-even, 2 places. */
  percentUsed: string;
  /** spent × period length / elapsed, 6 places half-even; null for LIFETIME. */
  projectedSpend: Decimal | null;
}

export interface UserBalance {
  user: string;
  spent: Decimal;
  held: Decimal;
  remaining: Decimal;
}

interface StatusRow {
  id: string;
  project_id: string;
  unit: Unit;
  period: Period;
  hard: boolean;
  scope: BudgetScope;
  scope_value: string | null;
  model_scope: ModelScope | null;
  model_value: string | null;
  lim: string;
  thresholds: number[];
  subject: string | null;
  users: number;
  spent: string;
  held: string;
  under_review: string;
  period_start: Date;
  period_end: Date;
}

@Injectable()
export class BudgetStatusService {
  constructor(@Inject(READS_DATABASE) private readonly reads: Database) {}

  /** Every live budget of the project, in its current period window. */
  async status(projectId: string, at: Date = new Date()): Promise<BudgetStatus[]> {
    const project = await this.reads.query('SELECT 1 FROM project WHERE id = $1', [projectId]);
    if (project.rowCount === 0) throw ApiError.notFound(`project ${projectId} not found`);
    const { rows } = await this.reads.query<StatusRow>(
      `SELECT b.id, b.project_id, b.unit, b.period, b.hard, b.scope,
              coalesce(b.scope_value, (SELECT k.prefix FROM api_key k WHERE k.id = b.scope_key_id)) AS scope_value, b.model_scope, b.model_value,
              b."limit"::text AS lim, b.thresholds, s.subject, s.users, s.spent::text AS spent, s.held::text AS held, r.under_review,
              w.period_start, w.period_end
       FROM budget b
       CROSS JOIN LATERAL spendgate_period_window(b.period, $2) w
       CROSS JOIN LATERAL (
         SELECT NULL::text AS subject, 0 AS users, coalesce(bp.spent, l.spent) AS spent, coalesce(bp.held, l.held) AS held
         FROM (SELECT 1) one
         LEFT JOIN budget_period bp ON bp.budget_id = b.id AND bp.period_start = w.period_start AND bp.subject = ''
         LEFT JOIN LATERAL (SELECT * FROM spendgate_budget_balance(b.id, '', w.period_start, w.period_end) WHERE bp.budget_id IS NULL) l ON true
         WHERE b.scope <> 'EACH_USER'
         UNION ALL
         SELECT top.subject, (SELECT count(*)::int FROM budget_period c WHERE c.budget_id = b.id AND c.period_start = w.period_start),
                coalesce(top.spent, 0), coalesce(top.held, 0)
         FROM (SELECT 1) one
         LEFT JOIN LATERAL (SELECT p.subject, p.spent, p.held FROM budget_period p WHERE p.budget_id = b.id AND p.period_start = w.period_start
                            ORDER BY p.spent + p.held DESC, p.subject LIMIT 1) top ON true
         WHERE b.scope = 'EACH_USER') s
       -- Of held, the holds of tasks under review (index task_under_review: flagged, unsettled tasks only).
       CROSS JOIN LATERAL (
         SELECT coalesce(sum(t.hold_amount), 0)::text AS under_review FROM task t
         WHERE t.project_id = b.project_id AND t.needs_review AND t.settled_at IS NULL AND t.unit = b.unit
           AND t.accepted_at >= w.period_start AND t.accepted_at < w.period_end
           AND spendgate_budget_subject(b.scope, b.scope_key_id, b.scope_value, true, t.api_key_id, t.end_user, coalesce(t.tags, '{}'),
                                        b.model_scope, b.model_value, t.model, t.family, t.kind) = coalesce(s.subject, '')) r
       WHERE b.project_id = $1 AND b.deleted_at IS NULL ORDER BY b.created_at, b.id`,
      [projectId, at],
    );
    return rows.map((r) => {
      const limit = dec(r.lim);
      const spent = dec(r.spent);
      const held = dec(r.held);
      return {
        percentUsed: percent(spent.plus(held), limit),
        projectedSpend: r.period === 'LIFETIME' ? null : projection(spent, r.period_start, r.period_end, at),
        budgetId: r.id,
        projectId: r.project_id,
        unit: r.unit,
        period: r.period,
        hard: r.hard,
        scope: r.scope,
        scopeValue: r.scope_value,
        modelScope: r.model_scope,
        modelValue: r.model_value,
        user: r.subject,
        users: r.users,
        limit,
        spent,
        held,
        heldUnderReview: dec(r.under_review),
        remaining: limit.minus(spent).minus(held),
        thresholds: r.thresholds,
        periodStart: r.period_start,
        periodEnd: r.period_end,
      };
    });
  }

  /** An EACH_USER budget's users and their own balances in the window of `at`, by user id, after `after`. */
  async users(
    budgetId: string,
    first: number,
    after: string | undefined,
    at: Date = new Date(),
  ): Promise<{ users: UserBalance[]; hasNextPage: boolean }> {
    const { rows } = await this.reads.query<{ subject: string; spent: string; held: string; lim: string }>(
      `SELECT p.subject, p.spent::text AS spent, p.held::text AS held, b."limit"::text AS lim
       FROM budget b CROSS JOIN LATERAL spendgate_period_window(b.period, $2) w
       JOIN budget_period p ON p.budget_id = b.id AND p.period_start = w.period_start
       WHERE b.id = $1 AND b.scope = 'EACH_USER' AND ($3::text IS NULL OR p.subject > $3)
       ORDER BY p.subject LIMIT $4`,
      [budgetId, at, after ?? null, first + 1],
    );
    const users = rows.slice(0, first).map((r) => {
      const spent = dec(r.spent);
      const held = dec(r.held);
      return { user: r.subject, spent, held, remaining: dec(r.lim).minus(spent).minus(held) };
    });
    return { users, hasNextPage: rows.length > first };
  }

  /**
   * A budget's events in its current window, newest first: thresholds crossed (budget_alert) and
   * refusals. A refusal writes no row of its own: its trace is the budget.exhausted event, one per
   * window and user, whose cause is 'exhausted:<budget>:<window start>:<user>'.
   */
  async events(budget: { budgetId: string; periodStart: Date }, first: number): Promise<BudgetEventView[]> {
    // The prefix is built here, not in SQL: only a constant LIKE pattern lets outbox_event_cause_prefix
    // serve it (format() is not folded at planning; measured: a sequential scan). toISOString spells
    // the window start as spendgate_iso does in the cause.
    const refusals = `exhausted:${budget.budgetId}:${budget.periodStart.toISOString()}:`;
    const { rows } = await this.reads.query<{
      kind: 'THRESHOLD' | 'REFUSED';
      at: Date;
      threshold: number | null;
      subject: string | null;
    }>(
      `SELECT * FROM (
         SELECT 'THRESHOLD' AS kind, a.crossed_at AS at, a.threshold, nullif(a.subject, '') AS subject
         FROM budget_alert a WHERE a.budget_id = $1 AND a.period_start = $2
         UNION ALL
         SELECT 'REFUSED', e.created_at, NULL, nullif(substr(e.cause, length($3) + 1), '')
         FROM outbox_event e WHERE e.cause LIKE $3 || '%') x
       ORDER BY at DESC, kind LIMIT $4`,
      [budget.budgetId, budget.periodStart, refusals, first],
    );
    return rows.map((r) => ({ kind: r.kind, at: r.at, threshold: r.threshold, user: r.subject }));
  }
}

export interface BudgetEventView {
  kind: 'THRESHOLD' | 'REFUSED';
  at: Date;
  threshold: number | null;
  user: string | null;
}

/** Burn-rate projection to the end of the window; a display figure, so rounded (half-even, 6 places). */
function projection(spent: Decimal, start: Date, end: Date, at: Date): Decimal {
  const elapsed = Math.max(1, at.getTime() - start.getTime());
  const length = end.getTime() - start.getTime();
  return spent.times(length).dividedBy(elapsed).toDecimalPlaces(6, DecimalCtor.ROUND_HALF_EVEN);
}
