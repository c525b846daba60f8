/**
 * Budgets: per project, unit, period window and scope (decisions §4, §7). Balances live in
 * budget_period rows that the ledger's functions move; this service creates and changes budgets.
 * Their status is budget-status.service.ts.
 */
import { Inject, Injectable } from '@nestjs/common';
import type { PoolClient } from 'pg';
import { ApiError } from '../common/api-error.js';
import { Database, DATABASE } from '../database/database.js';
import type { BudgetScope } from '../ledger/ledger.service.js';
import type { Decimal } from '../pricing/money.js';
import type { Unit } from '../pricing/pricing.types.js';
import { storedScope } from './budget-scope.js';
import { MODEL_ROUTES, routesIn } from '../catalog/catalog.js';
import { unitOf } from '../pricing/engine.js';

export type Period = 'DAILY' | 'WEEKLY' | 'MONTHLY' | 'LIFETIME';
/** The part of the catalog a budget counts, with its scope (decisions §20). */
export type ModelScope = 'MODEL' | 'FAMILY' | 'KIND';
export type { BudgetScope };

export interface BudgetInput {
  projectId: string;
  unit: Unit;
  limit: Decimal;
  period: Period;
  hard: boolean;
  thresholds?: number[];
  /** What the budget counts; PROJECT when omitted. */
  scope?: BudgetScope;
  /** API_KEY: the key's public prefix; TAG: "name=value"; USER: the end user; none for PROJECT and EACH_USER. */
  scopeValue?: string;
  /** Only tasks of this model, family or kind count (with any scope). */
  modelScope?: ModelScope;
  modelValue?: string;
}

export interface BudgetRow {
  id: string;
  projectId: string;
  unit: Unit;
  limit: string;
  period: Period;
  hard: boolean;
  thresholds: number[];
  scope: BudgetScope;
  scopeValue: string | null;
  modelScope: ModelScope | null;
  modelValue: string | null;
}

@Injectable()
export class BudgetsService {
  constructor(@Inject(DATABASE) private readonly db: Database) {}

  /**
   * Creates the project's budget for (unit, period, scope), or changes its limit, kind and
   * thresholds. Returns its id and, when it existed, what it was (for the audit trail).
   */
  async set(input: BudgetInput): Promise<{ id: string; before: BudgetRow | undefined }> {
    if (input.limit.isNegative()) throw ApiError.badRequest('limit: must not be negative');
    const thresholds = input.thresholds ?? [50, 80, 100];
    checkThresholds(thresholds);
    return this.inProjectLock(input.projectId, async (client) => {
      const scope = await storedScope(client, input, 'budget');
      const part = modelPart(input);
      const existing = await client.query<{ id: string }>(
        `SELECT id FROM budget WHERE project_id = $1 AND unit = $2::"Unit" AND period = $3::"Period" AND scope = $4::"BudgetScope"
           AND scope_key_id IS NOT DISTINCT FROM $5::uuid AND scope_value IS NOT DISTINCT FROM $6
           AND model_scope IS NOT DISTINCT FROM $7::"ModelScope" AND model_value IS NOT DISTINCT FROM $8 AND deleted_at IS NULL`,
        [input.projectId, input.unit, input.period, scope.scope, scope.keyId, scope.value, part.scope, part.value],
      );
      let id = existing.rows[0]?.id;
      const before = id ? await this.get(id) : undefined;
      if (id) {
        await client.query(`UPDATE budget SET "limit" = $2::numeric, hard = $3, thresholds = $4::int[] WHERE id = $1`, [
          id,
          input.limit.toFixed(),
          input.hard,
          thresholds,
        ]);
      } else {
        const created = await client.query<{ id: string }>(
          `INSERT INTO budget (id, project_id, unit, "limit", period, hard, thresholds, scope, scope_key_id, scope_value, model_scope, model_value)
           VALUES (gen_random_uuid(), $1, $2::"Unit", $3::numeric, $4::"Period", $5, $6::int[], $7::"BudgetScope", $8, $9, $10::"ModelScope", $11)
           RETURNING id`,
          [
            input.projectId,
            input.unit,
            input.limit.toFixed(),
            input.period,
            input.hard,
            thresholds,
            scope.scope,
            scope.keyId,
            scope.value,
            part.scope,
            part.value,
          ],
        );
        id = created.rows[0]!.id;
      }
      // The current window's balance, from what the ledger already holds. An EACH_USER budget's
      // users: every end user with money in the window already, each from the ledger (found by the
      // money model, decisions §16: a user who spent before the budget existed was missing from its
      // users until their next submission); later users get theirs on first use.
      if (scope.scope !== 'EACH_USER')
        await client.query(`SELECT spendgate_budget_period($1, clock_timestamp(), '')`, [id]);
      else {
        await client.query(
          `SELECT spendgate_budget_period($1, clock_timestamp(), u.end_user)
           FROM (SELECT DISTINCT t.end_user FROM spendgate_period_window($2::"Period", clock_timestamp()) w
                 JOIN ledger_entry e ON e.project_id = $3 AND e.unit = $4::"Unit" AND e.effective_at >= w.period_start AND e.effective_at < w.period_end
                 JOIN task t ON t.id = e.task_id
                 WHERE t.end_user IS NOT NULL) u`,
          [id, input.period, input.projectId, input.unit],
        );
      }
      return { id, before };
    });
  }

  /** A live budget as it stands (for the audit trail's before and after), or undefined. */
  async get(budgetId: string): Promise<BudgetRow | undefined> {
    const { rows } = await this.db.query<BudgetRow>(
      `SELECT b.id, b.project_id AS "projectId", b.unit, b."limit"::text AS "limit", b.period, b.hard, b.thresholds, b.scope,
              coalesce(b.scope_value, k.prefix) AS "scopeValue", b.model_scope AS "modelScope", b.model_value AS "modelValue"
       FROM budget b LEFT JOIN api_key k ON k.id = b.scope_key_id WHERE b.id = $1 AND b.deleted_at IS NULL`,
      [budgetId],
    );
    return rows[0];
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

/**
 * The part of the catalog a budget counts: a model id, a family or a kind the catalog has (so a
 * typo is refused, never a budget that silently counts nothing), in the unit its models are priced in.
 */
function modelPart(input: BudgetInput): { scope: ModelScope | null; value: string | null } {
  const value = input.modelValue?.trim();
  if (!input.modelScope) {
    if (value) throw ApiError.badRequest('modelValue: give modelScope (MODEL, FAMILY or KIND) with it');
    return { scope: null, value: null };
  }
  if (!value)
    throw ApiError.badRequest(
      `modelValue: a ${input.modelScope} budget needs the ${input.modelScope.toLowerCase()} it counts`,
    );
  const routes = routesIn(input.modelScope, value);
  if (routes.length === 0) {
    const field = ({ MODEL: 'id', FAMILY: 'family', KIND: 'kind' } as const)[input.modelScope];
    const known = [...new Set(MODEL_ROUTES.map((r) => r[field]))].sort();
    throw ApiError.badRequest(
      `modelValue: "${value.slice(0, 60)}" is not a ${input.modelScope.toLowerCase()} of the catalog` +
        (input.modelScope === 'MODEL' ? '' : ` (one of ${known.join(', ')})`),
    );
  }
  if (!routes.some((r) => unitOf(r) === input.unit))
    throw ApiError.badRequest(
      `unit: ${value} is priced in ${unitOf(routes[0]!)}, not ${input.unit}; credits and USD never mix`,
    );
  return { scope: input.modelScope, value };
}

function checkThresholds(thresholds: number[] | undefined): void {
  if (thresholds?.some((t) => !Number.isInteger(t) || t <= 0 || t > 1000)) {
    throw ApiError.badRequest('thresholds: must be whole percentages between 1 and 1000');
  }
}
