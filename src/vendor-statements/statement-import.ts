/**
 * Importing a vendor statement (decisions §14), streaming: csv-parse reads the body as it arrives
 * (a BOM, CRLF and quoted newlines are CSV; a record over MAX_RECORD_BYTES is refused), each row is
 * checked (statement-format.ts) and written in batches, all in one transaction: a row that cannot
 * be read refuses the whole statement with its line and column, and nothing stays. The file's
 * SHA-256 makes the same file the same statement; rows an earlier statement already holds (the same
 * task, time, amount and unit) are skipped. Then the statement is matched (statement-match.ts).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import { ApiError } from '../common/api-error.js';
import type { Database } from '../database/database.js';
import { archivedMonthIn, lockArchivedMonths } from '../tasks/archived-tasks.js';
import {
  layoutOf,
  LineError,
  parseLine,
  type ColumnMapping,
  type Layout,
  type StatementLine,
} from './statement-format.js';
import { lockImports, matchStatement } from './statement-match.js';

const BATCH = 5_000;
export const MAX_RECORD_BYTES = 64 * 1024;

export interface Imported {
  id: string;
  /** false: the same file was imported before; this is that statement */
  created: boolean;
}

class SameFile extends Error {
  constructor(readonly id: string) {
    super('the same file');
  }
}

/** Imports in the database's transaction of the async context (the caller opens it, with its audit record). */
export async function importStatement(
  db: Database,
  body: Readable,
  mapping: ColumnMapping[] | undefined,
  who: string,
): Promise<Imported> {
  // One import at a time across every instance: the same file sent twice at once is one statement,
  // and rows two files share are held once (the second import sees the first's, committed).
  await lockImports(db);
  // No month is archived or restored while the statement is checked and matched.
  await lockArchivedMonths(db, 'shared');
  const id = (await db.query<{ id: string }>('SELECT gen_random_uuid()::text AS id')).rows[0]!.id;
  // The file's digest is known at its end: until then a random placeholder holds the unique column.
  await db.query(
    `INSERT INTO vendor_statement (id, imported_by, file_digest, rows, repeated, summary) VALUES ($1, $2, $3, 0, 0, '{}')`,
    [id, who, randomBytes(32)],
  );
  const digest = createHash('sha256');
  body.on('data', (chunk: Buffer | string) => digest.update(chunk));
  const parser = body.pipe(
    parse({ bom: true, relax_column_count: true, skip_empty_lines: true, max_record_size: MAX_RECORD_BYTES }),
  );
  let layout: Layout | undefined;
  let line = 0;
  let batch: StatementLine[] = [];
  let rows = 0;
  try {
    for await (const record of parser as AsyncIterable<string[]>) {
      line += 1;
      if (!layout) {
        layout = layoutOf(record, mapping);
        continue;
      }
      batch.push(parseLine(record, layout, line));
      if (batch.length >= BATCH) {
        rows += await insertLines(db, id, batch, rows);
        batch = [];
      }
    }
  } catch (error) {
    body.unpipe(parser); // the caller reads or drops the rest (an HTTP body is drained so the client sees the 400)
    if (error instanceof LineError) throw ApiError.badRequest(`statement: ${error.message}`);
    const e = error as { code?: string; message?: string; lines?: number };
    if (typeof e.code === 'string' && e.code.startsWith('CSV_')) {
      throw ApiError.badRequest(
        `statement: line ${(e.lines ?? line) + 1}: not CSV as written (${e.code === 'CSV_MAX_RECORD_SIZE' ? `a record over ${MAX_RECORD_BYTES / 1024} KB` : e.code.toLowerCase().replace(/_/g, ' ')})`,
      );
    }
    throw error;
  }
  if (!layout) throw ApiError.badRequest('statement: it is empty: a header line and one row per billed task');
  if (batch.length) rows += await insertLines(db, id, batch, rows);
  const fileDigest = digest.digest();
  const same = await db.query<{ id: string }>('SELECT id::text FROM vendor_statement WHERE file_digest = $1', [
    fileDigest,
  ]);
  if (same.rows[0]) throw new SameFile(same.rows[0].id);
  // Rows an earlier statement holds (the same task, time, amount, unit) are not counted twice.
  const repeated = await db.query(
    `DELETE FROM vendor_statement_line l WHERE l.statement_id = $1 AND EXISTS (
       SELECT 1 FROM vendor_statement_line o WHERE o.vendor_task_id = l.vendor_task_id AND o.statement_id <> $1
         AND o.billed_at = l.billed_at AND o.amount = l.amount AND o.unit = l.unit)`,
    [id],
  );
  await db.query(
    `UPDATE vendor_statement SET file_digest = $2, rows = $3, repeated = $4,
            period_from = (SELECT min(billed_at) FROM vendor_statement_line WHERE statement_id = $1),
            period_to = (SELECT max(billed_at) FROM vendor_statement_line WHERE statement_id = $1)
     WHERE id = $1`,
    [id, fileDigest, rows, repeated.rowCount ?? 0],
  );
  await refuseArchived(db, id);
  await matchStatement(db, id, who);
  return { id, created: true };
}

/**
 * A statement that touches an archived month (decisions §18) cannot be matched: that month's tasks
 * are in its files, so its lines would read as billed but not ours, and its tasks the vendor left
 * out would not be listed. Refused, with the way back (restore, import, archive again).
 */
async function refuseArchived(db: Database, id: string): Promise<void> {
  const { rows: any } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM archived_month');
  if (any[0]!.n === 0) return;
  const { rows: billed } = await db.query<{ vendor_task_id: string; month: string }>(
    `SELECT l.vendor_task_id::text, to_char(a.month, 'YYYY-MM') AS month
     FROM vendor_statement_line l JOIN task_upstream u ON u.upstream_task_id = l.vendor_task_id
     JOIN archived_month a ON a.task_ids @> u.task_id
     WHERE l.statement_id = $1 AND NOT EXISTS (SELECT 1 FROM task t WHERE t.id = u.task_id)
     ORDER BY l.line_no LIMIT 1`,
    [id],
  );
  const way = (month: string) =>
    `restore it (\`spendgate archive restore ${month}\`), import the statement, then archive it again`;
  if (billed[0])
    throw ApiError.conflict(
      `statement: it bills task ${billed[0].vendor_task_id}, accepted in ${billed[0].month}, which is archived: ${way(billed[0].month)}`,
    );
  const { rows: days } = await db.query<{ from: Date; to: Date }>(
    `SELECT date_trunc('day', period_from, 'UTC') AS from, date_trunc('day', period_to, 'UTC') + interval '1 day' AS to FROM vendor_statement WHERE id = $1`,
    [id],
  );
  const month = days[0]?.from ? await archivedMonthIn(db, days[0].from, days[0].to) : undefined;
  if (month)
    throw ApiError.conflict(
      `statement: its days (${isoDay(days[0]!.from)} to ${isoDay(new Date(days[0]!.to.getTime() - 86_400_000))}) hold ${month}, which is archived: the tasks it may have left out are in that month's files; ${way(month)}`,
    );
}

const isoDay = (d: Date) => d.toISOString().slice(0, 10);

/**
 * Runs the import in a transaction (`run` opens it, with the audit record); the same file answers its earlier
 * statement.
 */
export async function importOnce(
  run: (fn: () => Promise<Imported>) => Promise<Imported>,
  fn: () => Promise<Imported>,
): Promise<Imported> {
  try {
    return await run(fn);
  } catch (error) {
    if (error instanceof SameFile) return { id: error.id, created: false };
    throw error;
  }
}

async function insertLines(db: Database, id: string, lines: StatementLine[], before: number): Promise<number> {
  await db.query(
    `INSERT INTO vendor_statement_line (statement_id, line_no, vendor_task_id, model, billed_at, unit, amount)
     SELECT $1, $2::int + n, t, m, b, u::"Unit", a::numeric
     FROM unnest($3::bigint[], $4::text[], $5::timestamptz[], $6::text[], $7::text[]) WITH ORDINALITY x(t, m, b, u, a, n)`,
    [
      id,
      before,
      lines.map((l) => l.vendorTaskId),
      lines.map((l) => l.model),
      lines.map((l) => l.billedAt),
      lines.map((l) => l.unit),
      lines.map((l) => l.amount),
    ],
  );
  return lines.length;
}
