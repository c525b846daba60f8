/**
 * What a report's answer depends on, read as one stamp before it is computed (decisions §22): the
 * epoch (renames, commitments) and the sum of the change counters of the months and projects the
 * answer covers (books_change, advanced in every roll-up write's own transaction). Counters only
 * grow, so over the same months and projects a different sum means something changed, and an
 * answer computed after reading a stamp holds at least every change the stamp counts.
 *
 * Also whether every month of the range is closed: such an answer is final (nothing posts into a
 * closed month; a reopened one is open again at the next read, and its counters move with its
 * first posting).
 */
import type { Database } from '../database/database.js';

export interface BooksScope {
  /** The projects the answer covers, as the caller's access resolved them; undefined or null: every project. */
  projectIds: string[] | null | undefined;
  /** [from, to): the days the answer covers. */
  from: Date;
  to: Date;
}

export interface BooksStamp {
  /** `<epoch>.<sum of counters>`: what the answer claims to include. */
  version: string;
  /** Every month of the range is closed. */
  closed: boolean;
}

/** No entry is dated outside [1970, 10000) (the ledger's CHECK): a range beyond counts nothing more. */
const BOOKS_FROM = Date.UTC(1970, 0, 1);
const BOOKS_END = Date.UTC(10000, 0, 1);

/** The first day of the month `months` after January 1970, as YYYY-MM-DD (year 10000 written as such, not +010000). */
function monthText(months: number): string {
  return `${1970 + Math.floor(months / 12)}-${String((months % 12) + 1).padStart(2, '0')}-01`;
}

/** The months [first, end) that [from, to) touches within the books' years, and how many. */
export function monthsOf(from: Date, to: Date): { first: string; end: string; count: number } {
  const clamp = (t: number) => new Date(Math.min(Math.max(t, BOOKS_FROM), BOOKS_END - 1));
  const start = clamp(from.getTime());
  const last = clamp(Math.max(from.getTime(), to.getTime() - 1));
  const index = (d: Date) => (d.getUTCFullYear() - 1970) * 12 + d.getUTCMonth();
  return { first: monthText(index(start)), end: monthText(index(last) + 1), count: index(last) - index(start) + 1 };
}

/** The stamp of `scope`, read now from `db`: where its answer is computed from (a replica, if reports read one). */
export async function readStamp(db: Pick<Database, 'prepared'>, scope: BooksScope): Promise<BooksStamp> {
  const months = monthsOf(scope.from, scope.to);
  // Prepared: every cached read asks it first, and its planning took as long as its execution.
  const { rows } = await db.prepared<{ epoch: string; changes: string; closed: number }>(
    'books_stamp',
    `SELECT e.version::text AS epoch,
            (SELECT coalesce(sum(c.version), 0)::text FROM books_change c
              WHERE c.month >= $1::date AND c.month < $2::date AND ($3::uuid[] IS NULL OR c.project_id = ANY($3))) AS changes,
            (SELECT count(DISTINCT m.month)::int FROM month_close m
              WHERE m.reopened_at IS NULL AND m.month >= $1::date AND m.month < $2::date) AS closed
     FROM books_epoch e`,
    [months.first, months.end, scope.projectIds ?? null],
  );
  const row = rows[0] ?? { epoch: '0', changes: '0', closed: 0 };
  return { version: `${row.epoch}.${row.changes}`, closed: row.closed >= months.count };
}

/** One project's part of a stamp: its name (reports sort by it) and the sum of its counters. */
export interface ProjectStamp {
  id: string;
  name: string;
  changes: string;
  /** `<epoch>.<changes>`: what a part of this project claims. */
  version: string;
}

export interface ProjectStamps {
  epoch: string;
  closed: boolean;
  /** By name, as reports order them (byte order, COLLATE "C"). */
  projects: ProjectStamp[];
}

/**
 * The stamp of each project of `scope` (every project when it names none), for answers kept project by
 * project; undefined when two of them share a name (a report's rows by name would interleave them).
 */
export async function readProjectStamps(
  db: Pick<Database, 'prepared'>,
  scope: BooksScope,
): Promise<ProjectStamps | undefined> {
  const months = monthsOf(scope.from, scope.to);
  const { rows } = await db.prepared<{ epoch: string; closed: number; projects: Array<[string, string, string]> }>(
    'books_project_stamps',
    `SELECT e.version::text AS epoch,
            (SELECT count(DISTINCT m.month)::int FROM month_close m
              WHERE m.reopened_at IS NULL AND m.month >= $1::date AND m.month < $2::date) AS closed,
            (SELECT coalesce(json_agg(json_build_array(p.id, p.name, coalesce(c.changes, 0)::text) ORDER BY p.name COLLATE "C"), '[]')
              FROM project p
              LEFT JOIN (SELECT project_id, sum(version) AS changes FROM books_change
                         WHERE month >= $1::date AND month < $2::date GROUP BY project_id) c ON c.project_id = p.id
              WHERE $3::uuid[] IS NULL OR p.id = ANY($3)) AS projects
     FROM books_epoch e`,
    [months.first, months.end, scope.projectIds ?? null],
  );
  const row = rows[0]!;
  const projects = row.projects.map(([id, name, changes]) => ({
    id,
    name,
    changes,
    version: `${row.epoch}.${changes}`,
  }));
  for (let i = 1; i < projects.length; i++) if (projects[i]!.name === projects[i - 1]!.name) return undefined;
  return { epoch: row.epoch, closed: row.closed >= months.count, projects };
}

/** What identifies a scope's stamp: its projects (sorted) and months. */
export function scopeKey(scope: BooksScope): string {
  const months = monthsOf(scope.from, scope.to);
  return `${scope.projectIds ? [...scope.projectIds].sort().join(',') : '*'}|${months.first}|${months.end}`;
}
