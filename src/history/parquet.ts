/**
 * An archive's Parquet files (decisions §18), written and read with DuckDB (@duckdb/node-api):
 * rows go through a CSV file in the archive's working directory (every value quoted, NULL bare, so
 * an empty text and a NULL stay apart), DuckDB writes the Parquet from it on one thread, so the
 * same rows always give the same bytes. Each file's rows are digested as they are written and
 * again as DuckDB reads them back: the archive is dropped from the database only when both agree.
 * A table's rows come as PostgreSQL's own CSV (COPY, copyToParquet) and are compared as text:
 * DuckDB writes the Parquet's rows back to CSV in the same dialect, and the two texts' digests
 * must be equal. Node never parses them (an 833k-task month's archive: 132 s when node did, 38 s
 * so; bench/FINDINGS.md).
 */
import { createHash, type Hash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { once } from 'node:events';
import { Transform, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
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
  await csvToParquet(scratch, file, columns);
  return { rows: digest.rows, rowsSha256: digest.hex(), fileSha256: await fileSha256(file) };
}

/** DuckDB reads the CSV (every column as text) and writes the Parquet with the columns' types; the CSV is removed. */
async function csvToParquet(csv: string, file: string, columns: ParquetColumn[]): Promise<void> {
  const db = await duck();
  try {
    const names = columns.map((c) => `"${c.name}"`).join(', ');
    const csvColumns = `{${columns.map((c) => `${sqlText(c.name)}: 'VARCHAR'`).join(', ')}}`;
    await db.connection.run(`CREATE TABLE rows_ (${columns.map((c) => `"${c.name}" ${c.type}`).join(', ')})`);
    await db.connection.run(
      `INSERT INTO rows_ SELECT ${columns.map((c) => `CAST("${c.name}" AS ${c.type})`).join(', ')}
       FROM read_csv(${sqlText(csv)}, header = false, columns = ${csvColumns}, quote = '"', escape = '"',
                     allow_quoted_nulls = false, auto_detect = false, parallel = false)`,
    );
    await db.connection.run(
      `COPY (SELECT ${names} FROM rows_) TO ${sqlText(file)} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 100000)`,
    );
  } finally {
    db.close();
    await rm(csv, { force: true });
  }
}

/** The SHA-256 of the bytes passing through (a CSV as it is written). */
class Tally extends Transform {
  readonly hash = createHash('sha256');
  constructor() {
    super({
      transform: (chunk: Buffer, _encoding, done) => {
        this.hash.update(chunk);
        done(null, chunk);
      },
    });
  }
}

export interface CopiedFile {
  written: WrittenFile;
  /** The Parquet's rows as DuckDB reads them back, written again as CSV in PostgreSQL's dialect. */
  readBack: { rows: number; rowsSha256: string };
}

/**
 * A table's rows as PostgreSQL's CSV (`COPY … TO STDOUT (FORMAT csv, FORCE_QUOTE *)`: every value
 * quoted, NULL bare), which `copy` writes into the sink it is given, to a Parquet file of VARCHAR
 * columns; then the file read back by DuckDB and written as CSV in the same dialect. The rows'
 * digest is the SHA-256 of that text: equal digests are equal rows, in order.
 */
export async function copyToParquet(
  file: string,
  scratch: string,
  columns: ParquetColumn[],
  copy: (sink: Writable) => Promise<number>,
): Promise<CopiedFile> {
  const tally = new Tally();
  const out = createWriteStream(scratch);
  const written = pipeline(tally, out);
  let copied: number;
  try {
    copied = await copy(tally);
  } catch (error) {
    tally.destroy(error as Error); // the scratch file closed; the archive's working directory goes
    await written.catch(() => {});
    throw error;
  }
  tally.end();
  await written;
  const rowsSha256 = tally.hash.digest('hex');
  await csvToParquet(scratch, file, columns);
  const back = `${scratch}.back`;
  const db = await duck();
  let rows: number;
  try {
    const counted = await db.connection.runAndReadAll(`SELECT count(*)::VARCHAR FROM read_parquet(${sqlText(file)})`);
    rows = Number(counted.getRows()[0]![0]);
    await db.connection.run(
      `COPY (SELECT * FROM read_parquet(${sqlText(file)})) TO ${sqlText(back)}
       (FORMAT csv, HEADER false, FORCE_QUOTE *, QUOTE '"', ESCAPE '"', NULLSTR '')`,
    );
  } finally {
    db.close();
  }
  try {
    return {
      written: { rows: copied, rowsSha256, fileSha256: await fileSha256(file) },
      readBack: { rows, rowsSha256: await fileSha256(back) },
    };
  } finally {
    await rm(back, { force: true });
  }
}

/** The file's rows read back by DuckDB, digested as writeParquet digests them. */
export async function readBack(file: string, columns: ParquetColumn[]): Promise<WrittenFile> {
  const digest = new RowDigest(columns);
  await eachRow(file, columns, (row) => digest.add(row));
  return { rows: digest.rows, rowsSha256: digest.hex(), fileSha256: await fileSha256(file) };
}

/**
 * Every row of the file in order, each cell as text (NULL as null), in batches of DuckDB's chunks.
 * A column the file does not have reads as NULL: an archive written before a migration appended
 * columns (charge_line's list_rate and list_amount, decisions §19) restores with them empty.
 */
export async function eachBatch(
  file: string,
  columns: ParquetColumn[],
  use: (rows: Cell[][]) => Promise<void> | void,
): Promise<void> {
  const db = await duck();
  try {
    const described = await db.connection.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${sqlText(file)})`);
    const present = new Set(described.getRows().map((r) => String(r[0])));
    const cells = columns.map((c) => (present.has(c.name) ? `CAST("${c.name}" AS VARCHAR)` : 'NULL'));
    const result = await db.connection.stream(`SELECT ${cells.join(', ')} FROM read_parquet(${sqlText(file)})`);
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
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
