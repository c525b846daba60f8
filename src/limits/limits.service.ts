/**
 * Limits on a project's traffic (decisions §20): requests per minute, tasks in flight and chat
 * tokens per minute, per project, API key, tag, end user or each end user. This service owns the
 * usage_limit rows; the hold's SQL checks and counts them (spendgate_limit_refusal,
 * spendgate_take_limits) and every function that ends a task frees them (spendgate_release_limits).
 */
import { Inject, Injectable } from '@nestjs/common';
import { storedScope } from '../budgets/budget-scope.js';
import { ApiError } from '../common/api-error.js';
import { Database, DATABASE } from '../database/database.js';
import type { LimitKind } from '../ledger/holds.js';
import type { BudgetScope } from '../ledger/ledger.service.js';

export type { LimitKind };

/** The largest amount a limit takes: far above any vendor's rate, and an Int in GraphQL. */
export const MAX_LIMIT = 2_000_000_000;

export interface LimitInput {
  projectId: string;
  kind: LimitKind;
  amount: number;
  scope?: BudgetScope;
  /** API_KEY: the key's public prefix; TAG: "name=value"; USER: the end user; none for PROJECT and EACH_USER. */
  scopeValue?: string;
}

export interface LimitRow {
  id: string;
  projectId: string;
  kind: LimitKind;
  amount: number;
  scope: BudgetScope;
  scopeValue: string | null;
  createdAt: Date;
  createdBy: string;
}

/** A subject's use of a limit now: this minute's count, or the tasks in flight. */
export interface LimitUseNow {
  /** The end user for EACH_USER; '' for every other scope. */
  subject: string;
  /** A bigint as text: a tokens-per-minute count corrected to the vendor's can pass 2^31. */
  used: string;
}

const ROW = `SELECT l.id, l.project_id AS "projectId", l.kind, l.amount::int AS amount, l.scope,
                    coalesce(l.scope_value, k.prefix) AS "scopeValue", l.created_at AS "createdAt", l.created_by AS "createdBy"
             FROM usage_limit l LEFT JOIN api_key k ON k.id = l.scope_key_id`;

@Injectable()
export class LimitsService {
  constructor(@Inject(DATABASE) private readonly db: Database) {}

  /**
   * Creates the project's limit of this kind and scope, or changes its amount. Returns its id and,
   * when it existed, what it was (for the audit trail). Tasks already in flight are not counted
   * by a new tasks-in-flight limit; this minute's requests are counted from now.
   */
  async set(input: LimitInput, by: string): Promise<{ id: string; before: LimitRow | undefined }> {
    if (!Number.isInteger(input.amount) || input.amount < 1 || input.amount > MAX_LIMIT)
      throw ApiError.badRequest(`amount: a whole number from 1 to ${MAX_LIMIT}`);
    return this.db.transaction(async (client) => {
      const project = await client.query('SELECT 1 FROM project WHERE id = $1', [input.projectId]);
      if (project.rowCount === 0) throw ApiError.notFound(`project ${input.projectId} not found`);
      await client.query('SELECT spendgate_lock_project($1)', [input.projectId]);
      const scope = await storedScope(client, input, 'limit');
      const existing = await client.query<{ id: string }>(
        `SELECT id FROM usage_limit WHERE project_id = $1 AND kind = $2::"LimitKind" AND scope = $3::"BudgetScope"
           AND scope_key_id IS NOT DISTINCT FROM $4::uuid AND scope_value IS NOT DISTINCT FROM $5`,
        [input.projectId, input.kind, scope.scope, scope.keyId, scope.value],
      );
      const id = existing.rows[0]?.id;
      if (id) {
        const before = await this.get(id);
        await client.query('UPDATE usage_limit SET amount = $2 WHERE id = $1', [id, input.amount]);
        return { id, before };
      }
      const created = await client.query<{ id: string }>(
        `INSERT INTO usage_limit (id, project_id, kind, amount, scope, scope_key_id, scope_value, created_by)
         VALUES (gen_random_uuid(), $1, $2::"LimitKind", $3, $4::"BudgetScope", $5, $6, $7) RETURNING id`,
        [input.projectId, input.kind, input.amount, scope.scope, scope.keyId, scope.value, by],
      );
      return { id: created.rows[0]!.id, before: undefined };
    });
  }

  async get(limitId: string): Promise<LimitRow | undefined> {
    const { rows } = await this.db.query<LimitRow>(`${ROW} WHERE l.id = $1`, [limitId]);
    return rows[0];
  }

  async list(projectId: string): Promise<LimitRow[]> {
    const { rows } = await this.db.query<LimitRow>(
      `${ROW} WHERE l.project_id = $1 ORDER BY l.kind, l.scope, l.created_at`,
      [projectId],
    );
    return rows;
  }

  /**
   * Deletes a limit with its counts (a task it counted is freed of it), under the project's lock
   * as holds count limits under it: a hold never raises the count of a limit being deleted.
   */
  async remove(limitId: string): Promise<boolean> {
    return this.db.transaction(async (client) => {
      const { rows } = await client.query<{ project_id: string }>('SELECT project_id FROM usage_limit WHERE id = $1', [
        limitId,
      ]);
      if (!rows[0]) return false;
      await client.query('SELECT spendgate_lock_project($1)', [rows[0].project_id]);
      const { rowCount } = await client.query('DELETE FROM usage_limit WHERE id = $1', [limitId]);
      return (rowCount ?? 0) > 0;
    });
  }

  /** Its use now, the most used subjects first (at most `first`). */
  async useNow(limit: Pick<LimitRow, 'id' | 'kind'>, first: number): Promise<LimitUseNow[]> {
    const { rows } = await this.db.query<LimitUseNow>(
      `SELECT u.subject, u.used::text AS used FROM limit_use u
       WHERE u.limit_id = $1 AND u.window_start = spendgate_limit_window($2::"LimitKind", clock_timestamp()) AND u.used > 0
       ORDER BY u.used DESC, u.subject LIMIT $3`,
      [limit.id, limit.kind, first],
    );
    return rows;
  }
}
