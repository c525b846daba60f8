/**
 * Budgets: per project, per unit, per period window. Balances live in budget_period rows that
 * the ledger functions move; this service creates budgets and reads their status.
 */
import { Inject, Injectable } from '@nestjs/common';
import { ApiError } from '../common/api-error.js';
import type { PoolClient } from 'pg';
import { Database, DATABASE, READS_DATABASE } from '../database/database.js';
import { dec, Decimal as DecimalCtor, percent, type Decimal } from '../pricing/money.js';
import type { Unit } from '../pricing/pricing.types.js';

export type Period = 'DAILY' | 'WEEKLY' | 'MONTHLY' | 'LIFETIME';

export interface BudgetInput {
  projectId: string;
  unit: Unit;
  limit: Decimal;
  period: Period;
  hard: boolean;
  thresholds?: number[];
}

export interface BudgetStatus {
  budgetId: string;
  projectId: string;
  unit: Unit;
  period: Period;
  hard: boolean;
  limit: Decimal;
  spent: Decimal;
  held: Decimal;
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

interface StatusRow {
  id: string;
  project_id: string;
  unit: Unit;
  period: Period;
  hard: boolean;
  lim: string;
  thresholds: number[];
  spent: string;
  held: string;
  period_start: Date;
  period_end: Date;
}

@Injectable()
export class BudgetsService {
  constructor(
    @Inject(DATABASE) private readonly db: Database,
    @Inject(READS_DATABASE) private readonly reads: Database,
  ) {}

  /** Creates the project's budget for (unit, period), or changes its limit, kind and thresholds. */
  async set(input: BudgetInput): Promise<string> {
    if (input.limit.isNegative()) throw ApiError.badRequest('limit: must not be negative');
    const thresholds = input.thresholds ?? [50, 80, 100];
    checkThresholds(thresholds);
    return this.inProjectLock(input.projectId, async (client) => {
      const existing = await client.query<{ id: string }>(
        `SELECT id FROM budget WHERE project_id = $1 AND unit = $2::"Unit" AND period = $3::"Period" AND deleted_at IS NULL`,
        [input.projectId, input.unit, input.period],
      );
      let id = existing.rows[0]?.id;
      if (id) {
        await client.query(`UPDATE budget SET "limit" = $2::numeric, hard = $3, thresholds = $4::int[] WHERE id = $1`, [id, input.limit.toFixed(), input.hard, thresholds]);
      } else {
        const created = await client.query<{ id: string }>(
          `INSERT INTO budget (id, project_id, unit, "limit", period, hard, thresholds)
           VALUES (gen_random_uuid(), $1, $2::"Unit", $3::numeric, $4::"Period", $5, $6::int[]) RETURNING id`,
          [input.projectId, input.unit, input.limit.toFixed(), input.period, input.hard, thresholds],
        );
        id = created.rows[0]!.id;
      }
      await client.query('SELECT spendgate_budget_period($1, clock_timestamp())', [id]);
      return id;
    });
  }

  /** Changes a budget's limit, kind or thresholds; its balances stay as the ledger has them. */
  async update(budgetId: string, change: { limit?: Decimal; hard?: boolean; thresholds?: number[] }): Promise<boolean> {
    if (change.limit?.isNegative()) throw ApiError.badRequest('limit: must not be negative');
    checkThresholds(change.thresholds);
    const { rowCount } = await this.db.query(
      `UPDATE budget SET "limit" = coalesce($2::numeric, "limit"), hard = coalesce($3, hard), thresholds = coalesce($4::int[], thresholds)
       WHERE id = $1 AND deleted_at IS NULL`,
      [budgetId, change.limit?.toFixed() ?? null, change.hard ?? null, change.thresholds ?? null],
    );
    if (!rowCount) throw ApiError.notFound(`budget ${budgetId} not found`);
    return true;
  }

  async remove(budgetId: string, projectId?: string): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `UPDATE budget SET deleted_at = clock_timestamp() WHERE id = $1 AND deleted_at IS NULL AND ($2::uuid IS NULL OR project_id = $2)`,
      [budgetId, projectId ?? null],
    );
    return (rowCount ?? 0) > 0;
  }

  /**
   * Every live budget of the project, in its current period window. A pure read on the read pool:
   * it takes no project lock (holds of the project never wait for it); a period nobody has
   * touched yet reads what the ledger holds for its window, which is what its row would start from.
   */
  async status(projectId: string, at: Date = new Date()): Promise<BudgetStatus[]> {
    const project = await this.reads.query('SELECT 1 FROM project WHERE id = $1', [projectId]);
    if (project.rowCount === 0) throw ApiError.notFound(`project ${projectId} not found`);
    const { rows } = await this.reads.query<StatusRow>(
      `SELECT b.id, b.project_id, b.unit, b.period, b.hard, b."limit"::text AS lim, b.thresholds,
              coalesce(bp.spent, l.spent)::text AS spent, coalesce(bp.held, l.held)::text AS held, w.period_start, w.period_end
       FROM budget b
       CROSS JOIN LATERAL spendgate_period_window(b.period, $2) w
       LEFT JOIN budget_period bp ON bp.budget_id = b.id AND bp.period_start = w.period_start
       LEFT JOIN LATERAL (SELECT * FROM spendgate_ledger_balance(b.project_id, b.unit, w.period_start, w.period_end)
                          WHERE bp.budget_id IS NULL) l ON true
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
        limit,
        spent,
        held,
        remaining: limit.minus(spent).minus(held),
        thresholds: r.thresholds,
        periodStart: r.period_start,
        periodEnd: r.period_end,
      };
    });
  }

  /** Runs `fn` in a transaction holding the project's money lock (see spendgate_lock_project). */
  private async inProjectLock<T>(projectId: string, fn: (client: PoolClient) => Promise<T>): Promise<T> {
    return this.db.transaction(async (client) => {
      const project = await client.query('SELECT 1 FROM project WHERE id = $1', [projectId]);
      if (project.rowCount === 0) throw ApiError.notFound(`project ${projectId} not found`);
      await client.query('SELECT spendgate_lock_project($1)', [projectId]);
      return fn(client);
    });
  }
}

function checkThresholds(thresholds: number[] | undefined): void {
  if (thresholds?.some((t) => !Number.isInteger(t) || t <= 0 || t > 1000)) {
    throw ApiError.badRequest('thresholds: must be whole percentages between 1 and 1000');
  }
}

/** Burn-rate projection to the end of the window; a display figure, so rounded (half-even, 6 places). */
function projection(spent: Decimal, start: Date, end: Date, at: Date): Decimal {
  const elapsed = Math.max(1, at.getTime() - start.getTime());
  const length = end.getTime() - start.getTime();
  return spent.times(length).dividedBy(elapsed).toDecimalPlaces(6, DecimalCtor.ROUND_HALF_EVEN);
}
