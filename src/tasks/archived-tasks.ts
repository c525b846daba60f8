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
 * A task's project, also once its month is archived: task_upstream keeps the vendor's id and project,
 * so a permission is decided as before and the answer can say the month is archived. By the gateway's
 * own id the project is gone with the month: null, as for a thing of every project (only a caller who
 * sees them all gets through). Undefined: no such task.
 */
export async function projectOfTask(
  db: Pick<Database, 'query'>,
  ref: { upstreamTaskId: string } | { internalId: string },
): Promise<string | null | undefined> {
  if (!('internalId' in ref)) {
    const { rows } = await db.query<{ project_id: string }>(
      'SELECT project_id::text FROM task_upstream WHERE upstream_task_id = $1::bigint',
      [ref.upstreamTaskId],
    );
    return rows[0]?.project_id;
  }
  const { rows } = await db.query<{ project_id: string | null; archived: boolean }>(
    `SELECT (SELECT project_id::text FROM task WHERE id = $1::bigint) AS project_id,
            EXISTS (SELECT 1 FROM archived_month WHERE task_ids @> $1::bigint) AS archived`,
    [ref.internalId],
  );
  return rows[0]!.project_id ?? (rows[0]!.archived ? null : undefined);
}

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
