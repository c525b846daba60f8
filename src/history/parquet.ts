/**
 * An archive's Parquet files (decisions §18), written and read with DuckDB (@duckdb/node-api):
 * rows go through a CSV file in the archive's working directory (every value quoted, NULL bare, so
 * an empty text and a NULL stay apart), DuckDB writes the Parquet from it on one thread, so the
 * same rows always give the same bytes. Each file's rows are digested as they are written and
 * again as DuckDB reads them back: the archive is dropped from the database only when both agree.
 */
import { createHash, type Hash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { readFile, rm, stat } from 'node:fs/promises';
import { once } from 'node:events';
import { DuckDBInstance } from '@duckdb/node-api';
import { dec } from '../pricing/money.js';

export type Cell = string | null;

export interface ParquetColumn {
  name: string;
  /** VARCHAR keeps PostgreSQL's text of any value exactly; DECIMAL(38,18) for FOCUS costs. */
  type: 'VARCHAR' | 'DECIMAL(38,18)';
}

export interface WrittenFile {
  rows: number;
  /** SHA-256 of the rows (one JSON array of text per row, decimals canonical), hex. */
  rowsSha256: string;
  /** SHA-256 of the file's bytes, hex. */
  fileSha256: string;
}

/** Rows hashed in order; a DECIMAL column's value canonical (1.50 and 1.500000000000000000 alike). */
class RowDigest {
  private readonly hash: Hash = createHash('sha256');
  rows = 0;
  constructor(private readonly columns: ParquetColumn[]) {}
  add(row: Cell[]): void {
    const canonical = row.map((v, i) => (v !== null && this.columns[i]!.type !== 'VARCHAR' ? dec(v).toFixed() : v));
    this.hash.update(JSON.stringify(canonical));
    this.hash.update('\n');
    this.rows += 1;
  }
  hex(): string {
    return this.hash.digest('hex');
  }
}

const quote = (v: Cell) => (v === null ? '' : `"${v.replaceAll('"', '""')}"`);
const sqlText = (s: string) => `'${s.replaceAll("'", "''")}'`;

async function duck() {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  // One thread: rows in the order given, row groups the same every time (identical files).
  await connection.run('SET threads = 1');
  await connection.run('SET preserve_insertion_order = true');
  return {
    connection,
    close: () => {
      connection.closeSync();
      instance.closeSync();
    },
  };
}

/** Writes `batches` (rows of text cells) to `file` as Parquet; `scratch` is a CSV path it removes. */
export async function writeParquet(
  file: string,
  scratch: string,
  columns: ParquetColumn[],
  batches: AsyncIterable<Cell[][]>,
): Promise<WrittenFile> {
  const digest = new RowDigest(columns);
  const out = createWriteStream(scratch);
  for await (const batch of batches) {
    let text = '';
    for (const row of batch) {
      digest.add(row);
      text += `${row.map(quote).join(',')}\n`;
    }
    if (!out.write(text)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  const db = await duck();
  try {
    const names = columns.map((c) => `"${c.name}"`).join(', ');
    const csvColumns = `{${columns.map((c) => `${sqlText(c.name)}: 'VARCHAR'`).join(', ')}}`;
    await db.connection.run(`CREATE TABLE rows_ (${columns.map((c) => `"${c.name}" ${c.type}`).join(', ')})`);
    await db.connection.run(
      `INSERT INTO rows_ SELECT ${columns.map((c) => `CAST("${c.name}" AS ${c.type})`).join(', ')}
       FROM read_csv(${sqlText(scratch)}, header = false, columns = ${csvColumns}, quote = '"', escape = '"',
                     allow_quoted_nulls = false, auto_detect = false, parallel = false)`,
    );
    await db.connection.run(
      `COPY (SELECT ${names} FROM rows_) TO ${sqlText(file)} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 100000)`,
    );
  } finally {
    db.close();
    await rm(scratch, { force: true });
  }
  return { rows: digest.rows, rowsSha256: digest.hex(), fileSha256: await fileSha256(file) };
}

/** The file's rows read back by DuckDB, digested as writeParquet digests them. */
export async function readBack(file: string, columns: ParquetColumn[]): Promise<WrittenFile> {
  const digest = new RowDigest(columns);
  await eachRow(file, columns, (row) => digest.add(row));
  return { rows: digest.rows, rowsSha256: digest.hex(), fileSha256: await fileSha256(file) };
}

/** Every row of the file in order, each cell as text (NULL as null), in batches of DuckDB's chunks. */
export async function eachBatch(
  file: string,
  columns: ParquetColumn[],
  use: (rows: Cell[][]) => Promise<void> | void,
): Promise<void> {
  const db = await duck();
  try {
    const result = await db.connection.stream(
      `SELECT ${columns.map((c) => `CAST("${c.name}" AS VARCHAR)`).join(', ')} FROM read_parquet(${sqlText(file)})`,
    );
    for await (const rows of result.yieldRows())
      await use(rows.map((r) => r.map((v) => (v === null ? null : String(v)))));
  } finally {
    db.close();
  }
}

async function eachRow(file: string, columns: ParquetColumn[], use: (row: Cell[]) => void): Promise<void> {
  await eachBatch(file, columns, (rows) => rows.forEach(use));
}

/** Why a file is not the one a manifest names (missing, or other bytes); undefined when it is. */
export async function fileProblem(file: string, sha256: string): Promise<string | undefined> {
  if (!(await stat(file).catch(() => undefined))) return `${file} is missing`;
  if ((await fileSha256(file)) !== sha256) return `${file} is not the file its manifest names (SHA-256 differs)`;
  return undefined;
}

export async function fileSha256(file: string): Promise<string> {
  return createHash('sha256')
    .update(await readFile(file))
    .digest('hex');
}
