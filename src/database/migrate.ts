/**
 * Applies the committed migrations in prisma/migrations, in order, each in its own transaction,
 * under an advisory lock so that several instances starting together apply each one once; then
 * the stored functions of prisma/functions, each file the one source of its function, re-applied
 * when its text changed (Flyway's repeatable migrations: after every versioned one).
 *
 * Why not `prisma migrate deploy` at start-up: the Prisma CLI is a dev dependency that needs a
 * JS adapter trick to run offline and costs seconds per spawn. This runner keeps Prisma's own
 * bookkeeping table (`_prisma_migrations`, same columns and SHA-256 checksums), so the two are
 * interchangeable: `prisma migrate deploy` and `prisma migrate status` see the same history.
 */
import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { UTC_SESSION } from './utc.js';
import { ConfigError } from '../config/config.js';

const LOCK_KEY = 72_707_369; // arbitrary, fixed: "spendgate migrations"

export function migrationsDir(): string {
  return prismaDir('migrations');
}

export function functionsDir(): string {
  return prismaDir('functions');
}

function prismaDir(name: string): string {
  // dist/src/database -> repo root, or src/database when run from source.
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const candidate = path.join(dir, 'prisma', name);
    if (existsSync(candidate)) return candidate;
    dir = path.dirname(dir);
  }
  throw new Error(`prisma/${name} not found`);
}

/** `upTo`: apply only the migrations named up to it (tests of a migration that moves data). */
export async function migrate(
  databaseUrl: string,
  log: (line: string) => void = () => {},
  { upTo, partitionsAhead = 2 }: { upTo?: string; partitionsAhead?: number } = {},
): Promise<string[]> {
  const client = new pg.Client({ connectionString: databaseUrl, options: UTC_SESSION.join(' ') });
  await client.connect();
  const applied: string[] = [];
  try {
    await requireSupportedServer(client);
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY]);
    await client.query(`CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
      "id" VARCHAR(36) PRIMARY KEY NOT NULL,
      "checksum" VARCHAR(64) NOT NULL,
      "finished_at" TIMESTAMPTZ,
      "migration_name" VARCHAR(255) NOT NULL,
      "logs" TEXT,
      "rolled_back_at" TIMESTAMPTZ,
      "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
      "applied_steps_count" INTEGER NOT NULL DEFAULT 0)`);
    const done = await client.query<{ migration_name: string; checksum: string }>(
      'SELECT migration_name, checksum FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL',
    );
    const doneByName = new Map(done.rows.map((r) => [r.migration_name, r.checksum]));
    const dir = migrationsDir();
    const names = (await readdir(dir, { withFileTypes: true }))
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .filter((name) => upTo === undefined || name <= upTo)
      .sort();
    for (const name of names) {
      const sql = await readFile(path.join(dir, name, 'migration.sql'), 'utf8');
      const checksum = sha256(sql);
      const previous = doneByName.get(name);
      if (previous !== undefined) {
        if (previous !== checksum) throw new Error(`migration ${name} was changed after it was applied`);
        continue;
      }
      const first = await functionsFirst(client, sql);
      await inOneTransaction(client, `migration ${name}`, [
        ...(first.length
          ? [['SET LOCAL check_function_bodies = off'] as [string], ...first.map((f) => [f] as [string])]
          : []),
        [sql],
        [
          `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, applied_steps_count)
           VALUES ($1, $2, now(), $3, 1)`,
          [randomUUID(), checksum, name],
        ],
      ]);
      applied.push(name);
      log(`applied migration ${name}`);
    }
    // A database migrated only up to a point (a test of a data-moving migration) keeps the
    // functions of that point: the files are today's.
    if (upTo === undefined) {
      applied.push(...(await applyFunctions(client, log)));
      // The months' partitions the schema promises (decisions §18); the instances keep them made ahead.
      const made = await client.query<{ name: string }>('SELECT spendgate_make_partitions($1) AS name', [
        partitionsAhead,
      ]);
      for (const { name } of made.rows) log(`made partition ${name}`);
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => {});
    await client.end();
  }
  return applied;
}

/** The oldest PostgreSQL spendgate runs on (decisions §17); the suites run on 15 and 18. */
export const OLDEST_SERVER = { num: 150000, name: '15' };

/** Why a server is refused (undefined: it is recent enough), in one line. */
export function serverRefusal(versionNum: number, version: string): string | undefined {
  if (versionNum >= OLDEST_SERVER.num) return undefined;
  return (
    `the database runs PostgreSQL ${version}: spendgate needs PostgreSQL ${OLDEST_SERVER.name} or later ` +
    '(upgrade it, point DATABASE_URL at a newer server, or leave DATABASE_URL unset for the embedded one)'
  );
}

/** Refuses an older server before anything is written to it. */
async function requireSupportedServer(client: pg.Client): Promise<void> {
  const { rows } = await client.query<{ num: string; version: string }>(
    "SELECT current_setting('server_version_num') AS num, current_setting('server_version') AS version",
  );
  const refusal = serverRefusal(Number(rows[0]!.num), rows[0]!.version);
  if (refusal) throw new ConfigError(refusal);
}

/**
 * prisma/functions/*.sql, each applied in its own transaction when its text differs from the one
 * applied last (SHA-256 in `_spendgate_functions`). Bodies are not checked against each other while
 * they are replaced (check_function_bodies off): they refer to each other, in any order. A change of
 * a function's arguments or result still needs a versioned migration that drops it first.
 */
async function applyFunctions(client: pg.Client, log: (line: string) => void): Promise<string[]> {
  await client.query(`CREATE TABLE IF NOT EXISTS "_spendgate_functions" (
    "name" TEXT PRIMARY KEY, "checksum" VARCHAR(64) NOT NULL, "applied_at" TIMESTAMPTZ NOT NULL DEFAULT now())`);
  const done = new Map(
    (
      await client.query<{ name: string; checksum: string }>('SELECT name, checksum FROM "_spendgate_functions"')
    ).rows.map((r) => [r.name, r.checksum]),
  );
  const dir = functionsDir();
  const files = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  const applied: string[] = [];
  for (const file of files) {
    const sql = await readFile(path.join(dir, file), 'utf8');
    const checksum = sha256(sql);
    const name = `functions/${file}`;
    if (done.get(name) === checksum) continue;
    await inOneTransaction(client, name, [
      ['SET LOCAL check_function_bodies = off'],
      [sql],
      [
        `INSERT INTO "_spendgate_functions" (name, checksum) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now()`,
        [name, checksum],
      ],
    ]);
    applied.push(name);
    log(`applied ${name}`);
  }
  return applied;
}

/**
 * The files of the functions a migration's triggers name (EXECUTE FUNCTION f()) that the database
 * does not have yet: they go first, in the migration's transaction. The files are otherwise applied
 * after every migration, and a trigger cannot be made before its function. Applied again (and
 * recorded) with the others afterwards.
 */
async function functionsFirst(client: pg.Client, sql: string): Promise<string[]> {
  const names = new Set(
    [...sql.matchAll(/EXECUTE\s+(?:FUNCTION|PROCEDURE)\s+(?:public\.)?(\w+)\s*\(/gi)].map((m) => m[1]!),
  );
  const files: string[] = [];
  for (const name of names) {
    const file = path.join(functionsDir(), `${name}.sql`);
    // An older migration makes its trigger's function itself.
    if (
      !existsSync(file) ||
      new RegExp(`CREATE\\s+(OR\\s+REPLACE\\s+)?FUNCTION\\s+(public\\.)?${name}\\s*\\(`, 'i').test(sql)
    )
      continue;
    const { rows } = await client.query<{ present: boolean }>('SELECT to_regproc($1) IS NOT NULL AS present', [
      `public.${name}`,
    ]);
    if (!rows[0]!.present) files.push(await readFile(file, 'utf8'));
  }
  return files;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The statements in one transaction, with their record: all of them, or none and an error naming `what`. */
async function inOneTransaction(
  client: pg.Client,
  what: string,
  statements: Array<[string, unknown[]?]>,
): Promise<void> {
  await client.query('BEGIN');
  try {
    for (const [text, values] of statements) await client.query(text, values);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw new Error(`${what} failed: ${(error as Error).message}`, { cause: error });
  }
}
