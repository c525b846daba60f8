#!/usr/bin/env node
// Writes prisma/schema.sql: the schema the committed migrations produce, read back from a
// throw-away embedded PostgreSQL (src/database/schema-dump.ts says what is in it and why).
// Usage: npm run schema:dump
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../dist/src/database/embedded.js';
import { migrate } from '../dist/src/database/migrate.js';
import { dumpSchema } from '../dist/src/database/schema-dump.js';

const scratch = mkdtempSync(path.join(tmpdir(), 'spendgate-schema-'));
chmodSync(scratch, 0o711);
const db = await startEmbeddedPostgres({ dataDir: path.join(scratch, 'db') });
try {
  await migrate(db.url);
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    writeFileSync('prisma/schema.sql', await dumpSchema(client));
  } finally {
    await client.end();
  }
  console.log('wrote prisma/schema.sql');
} finally {
  await db.stop();
  rmSync(scratch, { recursive: true, force: true });
}
