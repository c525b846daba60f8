/**
 * What every `spendgate` command shares: the database it works on (DATABASE_URL, or the embedded
 * one under DATA_DIR: the running gateway's, or its own), the reports database, how it is named in
 * the audit trail, and its refusals.
 */
import { hostname, userInfo } from 'node:os';
import { loadConfig } from '../config/config.js';
import { Database } from '../database/database.js';
import type { EmbeddedDatabase } from '../database/embedded.js';
import { migrate } from '../database/migrate.js';
import type { Actor } from '../auth/audit-sink.js';
import type { ClientInfo } from '../auth/sessions.service.js';

/** A command's wrong use: printed with the usage, exit 2. */
export class UsageError extends Error {}

export async function withDatabase<T>(fn: (db: Database) => Promise<T>): Promise<T> {
  const config = loadConfig(process.env);
  let embedded: EmbeddedDatabase | undefined;
  let url = config.DATABASE_URL;
  if (!url) {
    const { startEmbeddedPostgres } = await import('../database/embedded.js'); // not in a production image
    embedded = await startEmbeddedPostgres({ dataDir: config.DATA_DIR });
    url = embedded.url;
  }
  await migrate(url);
  const db = new Database(url, 2);
  try {
    return await fn(db);
  } finally {
    await db.close();
    await embedded?.stop();
  }
}

/** `report` reads REPORTS_DATABASE_URL when it is set (a replica: no migrations, read-only), else as above. */
export async function withReportsDatabase<T>(fn: (db: Database) => Promise<T>): Promise<T> {
  const url = loadConfig(process.env).REPORTS_DATABASE_URL;
  if (!url) return withDatabase(fn);
  const db = new Database(url, 2, { readOnly: true });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

/**
 * The CLI in the audit trail: whoever runs it has the database's credentials (an operator at the
 * machine), named by their system user and host.
 */
export function cliActor(): { actor: Actor; client: ClientInfo } {
  const user = safe(() => userInfo().username) ?? 'unknown';
  const host = safe(() => hostname()) ?? 'unknown';
  return {
    actor: { kind: 'named', actorKind: 'cli', id: `${user}@${host}`, label: `cli:${user}@${host}` },
    client: { requestId: null, clientAddress: null, userAgent: 'spendgate-cli' },
  };
}

function safe<T>(fn: () => T): T | undefined {
  try {
    return fn();
  } catch {
    return undefined;
  }
}
