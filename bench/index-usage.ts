/**
 * Which indexes and triggers a workload used (docs/architecture.md, "The task table's indexes and
 * triggers": each one justified by a query or promise that needs it). With INDEX_USAGE=<file>, the
 * test suite's global teardown and every bench's scratch server (withScratchPostgres) add what
 * PostgreSQL counted in each of their databases to that JSON file before the server stops:
 * pg_stat_user_indexes (scans and entries read, a partition's index counted under its partitioned
 * index) and pg_stat_user_functions (calls of trigger functions; the servers run with
 * track_functions=all while INDEX_USAGE is set). `node dist/bench/index-usage.js <file>` prints it.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import pg from 'pg';

export interface Usage {
  runs: string[];
  indexes: Record<string, { scans: number; read: number }>;
  functions: Record<string, number>;
}

/** The server settings the counts need: trigger functions are counted only with track_functions. */
export const INDEX_USAGE_SETTINGS = process.env.INDEX_USAGE ? ['track_functions=all'] : [];

const INDEXES = `
  SELECT coalesce(pt.relname, s.relname) AS "table", coalesce(pi.relname, s.indexrelname) AS "index",
         sum(s.idx_scan)::text AS scans, sum(s.idx_tup_read)::text AS read
  FROM pg_stat_user_indexes s
  LEFT JOIN pg_inherits hi ON hi.inhrelid = s.indexrelid LEFT JOIN pg_class pi ON pi.oid = hi.inhparent
  LEFT JOIN pg_inherits ht ON ht.inhrelid = s.relid LEFT JOIN pg_class pt ON pt.oid = ht.inhparent
  GROUP BY 1, 2`;

/** Adds the counts of every database of the server at `url` (a URL of any of its databases) to INDEX_USAGE's file. */
export async function recordIndexUsage(url: string, run: string): Promise<void> {
  const file = process.env.INDEX_USAGE;
  if (!file) return;
  const usage: Usage = existsSync(file)
    ? (JSON.parse(readFileSync(file, 'utf8')) as Usage)
    : { runs: [], indexes: {}, functions: {} };
  usage.runs.push(run);
  const admin = new pg.Client(url);
  await admin.connect();
  const { rows: databases } = await admin.query<{ datname: string }>(
    `SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate`,
  );
  await admin.end();
  for (const { datname } of databases) {
    const target = new URL(url);
    target.pathname = `/${datname}`;
    const client = new pg.Client(target.toString());
    await client.connect();
    try {
      const { rows } = await client.query<{ table: string; index: string; scans: string; read: string }>(INDEXES);
      for (const r of rows) {
        const seen = (usage.indexes[`${r.table}.${r.index}`] ??= { scans: 0, read: 0 });
        seen.scans += Number(r.scans);
        seen.read += Number(r.read);
      }
      const { rows: calls } = await client.query<{ name: string; calls: string }>(
        `SELECT funcname AS name, sum(calls)::text AS calls FROM pg_stat_user_functions GROUP BY 1`,
      );
      for (const c of calls) usage.functions[c.name] = (usage.functions[c.name] ?? 0) + Number(c.calls);
    } finally {
      await client.end();
    }
  }
  writeFileSync(file, JSON.stringify(usage, null, 1) + '\n');
}

function print(file: string): void {
  const usage = JSON.parse(readFileSync(file, 'utf8')) as Usage;
  console.log(`runs: ${usage.runs.join(', ')}`);
  for (const [name, u] of Object.entries(usage.indexes).sort(([a], [b]) => a.localeCompare(b)))
    console.log(`${name.padEnd(70)} ${String(u.scans).padStart(10)} scans ${String(u.read).padStart(12)} read`);
  for (const [name, calls] of Object.entries(usage.functions).sort(([a], [b]) => a.localeCompare(b)))
    console.log(`${`${name}()`.padEnd(70)} ${String(calls).padStart(10)} calls`);
}

if (process.argv[1]?.endsWith('index-usage.js') && process.argv[2]) print(process.argv[2]);
