/**
 * A look-up of a task whose month was archived (decisions §18) says so: its rows left the database
 * with the month's partitions, its ids stayed (task_upstream, archived_month.task_ids).
 */
import { ApiError } from '../common/api-error.js';
import { clip } from '../common/ids.js';
import type { Database } from '../database/database.js';

/**
 * Taken exclusively by an archive or a restore, shared by work that must find a month's tasks either
 * all in the database or all archived from its first statement to its last (a vendor statement's
 * import checks for archived months, then matches against the tasks).
 */
export const lockArchivedMonths = (db: Pick<Database, 'query'>, mode: 'exclusive' | 'shared') =>
  mode === 'shared'
    ? db.query(`SELECT pg_advisory_xact_lock_shared(hashtext('spendgate: archived months'))`)
    : db.query(`SELECT pg_advisory_xact_lock(hashtext('spendgate: archived months'))`);

/**
 * The archived month (YYYY-MM) of a task named by the vendor's id or by the gateway's own
 * (`internal`), among the projects given (undefined: any; the gateway's own id names no project,
 * so it is answered only to a caller who reads every project).
 */
export async function archivedMonthOf(
  db: Pick<Database, 'query'>,
  ref: { upstreamTaskId: string } | { internalId: string },
  projectIds: string[] | undefined,
): Promise<string | undefined> {
  if ('internalId' in ref) {
    if (projectIds !== undefined) return undefined;
    const { rows } = await db.query<{ month: string }>(
      `SELECT to_char(month, 'YYYY-MM') AS month FROM archived_month WHERE task_ids @> $1::bigint`,
      [ref.internalId],
    );
    return rows[0]?.month;
  }
  const { rows } = await db.query<{ month: string }>(
    `SELECT to_char(a.month, 'YYYY-MM') AS month FROM task_upstream u JOIN archived_month a ON a.task_ids @> u.task_id
     WHERE u.upstream_task_id = $1 AND ($2::uuid[] IS NULL OR u.project_id = ANY($2))`,
    [ref.upstreamTaskId, projectIds ?? null],
  );
  return rows[0]?.month;
}

/**
 * The first archived month (YYYY-MM) that [from, to) touches: a list or total of tasks over it would
 * miss its tasks (they are in its files), so it is refused rather than answered short (decisions §18).
 */
export async function archivedMonthIn(
  db: Pick<Database, 'query'>,
  from: Date | undefined,
  to: Date | undefined,
): Promise<string | undefined> {
  if (!from && !to) return undefined;
  const { rows } = await db.query<{ month: string }>(
    `SELECT to_char(month, 'YYYY-MM') AS month FROM archived_month
     WHERE ($1::timestamptz IS NULL OR (month + interval '1 month')::timestamp AT TIME ZONE 'UTC' > $1)
       AND ($2::timestamptz IS NULL OR month::timestamp AT TIME ZONE 'UTC' < $2)
     ORDER BY month LIMIT 1`,
    [from ?? null, to ?? null],
  );
  return rows[0]?.month;
}

export const archivedRange = (month: string) =>
  ApiError.conflict(
    `the range holds ${month}, which is archived: its tasks are in its files (\`spendgate archive restore ${month}\` brings them back); its spend is in spendReport`,
  );

export const archivedTask = (taskId: string, month: string) =>
  ApiError.notFound(
    `task ${clip(taskId)} was accepted in ${month}, which is archived: \`spendgate archive restore ${month}\` brings it back`,
  );
