/**
 * The true-ups posted in a range's months (decisions §19), for readers such as the FOCUS export: one
 * per month and unit, the sum of its closes' (a reopened month closed again posts what its shortfall
 * became since); none where they add up to nothing.
 */
import type { Database } from '../database/database.js';
import type { Unit } from '../pricing/money.js';

export interface PostedTrueUp {
  /** The month's first day, `YYYY-MM-DD`. */
  month: string;
  unit: Unit;
  amount: string;
  /** The project that carries it: the adjustment is on its last day, without a key or a task. */
  projectId: string;
}

export async function trueUpsIn(db: Pick<Database, 'query'>, from: Date, to: Date): Promise<PostedTrueUp[]> {
  const { rows } = await db.query<PostedTrueUp>(
    `SELECT t.month::text AS month, t.unit, sum(t.amount)::text AS amount, c.project_id::text AS "projectId"
     FROM commitment_true_up t JOIN commitment c ON c.id = t.commitment_id
     WHERE t.month >= date_trunc('month', $1::timestamptz AT TIME ZONE 'UTC')::date AND t.month < ($2::timestamptz AT TIME ZONE 'UTC')::date
     GROUP BY t.month, t.unit, c.project_id HAVING sum(t.amount) <> 0
     ORDER BY t.month, t.unit`,
    [from, to],
  );
  return rows;
}
