/**
 * What an archive holds (decisions §18): a month's tasks, charge lines and ledger entries, each
 * table's rows as PostgreSQL's text of every column (exact, restorable as they were), and its cost
 * rows in FOCUS 1.2 columns for finance tools. Plain TypeScript over a Database.
 */
import path from 'node:path';
import type { Database } from '../database/database.js';
import { FOCUS_COLUMNS, focusRows, type FocusOptions } from '../reports/focus-export.js';
import type { Cell, ParquetColumn } from './parquet.js';

export interface ArchivedTable {
  table: 'task' | 'charge_line' | 'ledger_entry';
  file: string;
  /** The key rows are written in (and restored by), with each column's type for the next page. */
  key: Array<{ column: string; type: string }>;
}

export const ARCHIVED_TABLES: readonly ArchivedTable[] = [
  { table: 'task', file: 'tasks.parquet', key: [{ column: 'id', type: 'bigint' }] },
  {
    table: 'charge_line',
    file: 'charge_lines.parquet',
    key: [
      { column: 'task_id', type: 'bigint' },
      { column: 'stage', type: 'text' },
      { column: 'seq', type: 'integer' },
    ],
  },
  { table: 'ledger_entry', file: 'ledger_entries.parquet', key: [{ column: 'id', type: 'bigint' }] },
];

export const COSTS_FILE = 'costs.parquet';
const DECIMAL_FOCUS = new Set(['BilledCost', 'ContractedCost', 'EffectiveCost', 'ListCost', 'x_Credits']);
export const COST_COLUMNS: ParquetColumn[] = FOCUS_COLUMNS.map((name) => ({
  name,
  type: DECIMAL_FOCUS.has(name) ? 'DECIMAL(38,18)' : 'VARCHAR',
}));

export interface TableColumn {
  name: string;
  type: string;
}

/** A table's columns in their order, as the database has them now. */
export async function columnsOf(db: Pick<Database, 'query'>, table: string): Promise<TableColumn[]> {
  const { rows } = await db.query<TableColumn>(
    `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type FROM pg_attribute a
     WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
    [table],
  );
  return rows;
}

export const asParquet = (columns: TableColumn[]): ParquetColumn[] =>
  columns.map((c) => ({ name: c.name, type: 'VARCHAR' }));

const PAGE = 20_000;

/** A partition's rows in key order, a page at a time, every cell as PostgreSQL's text (spendgate_archive_page). */
export async function* partitionRows(
  db: Pick<Database, 'query'>,
  partition: string,
  t: ArchivedTable,
  columns: TableColumn[],
): AsyncGenerator<Cell[][]> {
  const keyIndexes = t.key.map((k) => columns.findIndex((c) => c.name === k.column));
  let last: Cell[] | null = null;
  for (;;) {
    const page: Cell[][] = (
      await db.query<{ r: Cell[] }>('SELECT r FROM spendgate_archive_page($1, $2, $3) r', [partition, last, PAGE])
    ).rows.map((x) => x.r);
    if (page.length === 0) return;
    yield page;
    const end: Cell[] = page[page.length - 1]!;
    last = keyIndexes.map((i) => end[i]!);
    if (page.length < PAGE) return;
  }
}

/** The month's cost rows in FOCUS 1.2 columns (the same rows as GET /reports/focus.csv for the month). */
export async function* costRows(db: Pick<Database, 'query'>, o: FocusOptions): AsyncGenerator<Cell[][]> {
  const rows = await focusRows(db, o);
  yield rows.map((r) => r.map((v, i) => (v === '' && COST_COLUMNS[i]!.type !== 'VARCHAR' ? null : v)));
}

/** Rows written back into a table (spendgate_restore_rows); a row already there is left as it is. */
export async function insertRows(db: Pick<Database, 'query'>, table: string, rows: Cell[][]): Promise<number> {
  if (rows.length === 0) return 0;
  const { rows: out } = await db.query<{ n: number }>('SELECT spendgate_restore_rows($1, $2::jsonb) AS n', [
    table,
    JSON.stringify(rows),
  ]);
  return out[0]!.n;
}

export const monthDir = (archiveDir: string, label: string) => path.join(archiveDir, label);
