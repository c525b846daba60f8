/**
 * What an archive holds (decisions §18): a month's tasks, charge lines and ledger entries, each
 * table's rows as PostgreSQL's text of every column (exact, restorable as they were), and its cost
 * rows in FOCUS 1.2 columns for finance tools. Plain TypeScript over a Database.
 */
import path from 'node:path';
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import type { Database } from '../database/database.js';
import { FOCUS_COLUMNS, focusRows, type FocusOptions } from '../reports/focus-export.js';
import type { Cell, ParquetColumn } from './parquet.js';

export interface ArchivedTable {
  table: 'task' | 'charge_line' | 'ledger_entry';
  file: string;
  /** The key rows are written in. */
  key: string[];
}

export const ARCHIVED_TABLES: readonly ArchivedTable[] = [
  { table: 'task', file: 'tasks.parquet', key: ['id'] },
  { table: 'charge_line', file: 'charge_lines.parquet', key: ['task_id', 'stage', 'seq'] },
  { table: 'ledger_entry', file: 'ledger_entries.parquet', key: ['id'] },
];

export const COSTS_FILE = 'costs.parquet';
const DECIMAL_FOCUS = new Set([
  'BilledCost',
  'ContractedCost',
  'ContractedUnitPrice',
  'EffectiveCost',
  'ListCost',
  'ListUnitPrice',
  'x_Credits',
]);
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

/**
 * The partitions' rows, one partition after another, each in key order, every column in the
 * table's order, as PostgreSQL's CSV with every value quoted and NULL bare (so an empty text and a
 * NULL stay apart), written into `sink` (left open). Answers how many rows were written.
 */
export async function copyPartitions(
  client: pg.PoolClient,
  partitions: string[],
  t: ArchivedTable,
  columns: TableColumn[],
  sink: Writable,
): Promise<number> {
  const list = columns.map((c) => client.escapeIdentifier(c.name)).join(', ');
  const order = t.key.map((k) => client.escapeIdentifier(k)).join(', ');
  let rows = 0;
  for (const name of partitions) {
    const stream = client.query(
      copyTo(
        `COPY (SELECT ${list} FROM ${client.escapeIdentifier(name)} ORDER BY ${order}) TO STDOUT (FORMAT csv, FORCE_QUOTE *)`,
      ),
    );
    await pipeline(stream, sink, { end: false });
    rows += stream.rowCount;
  }
  return rows;
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
