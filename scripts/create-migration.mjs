#!/usr/bin/env node
// Creates prisma/migrations/<timestamp>_<name>/migration.sql from the change between the schema
// the committed migrations produce (prisma/migrations/schema.snapshot.prisma) and
// prisma/schema.prisma, then moves the snapshot forward.
//
// Why not `prisma migrate dev`: with a driver adapter (needed offline, see toolchain notes) its
// shadow database is dropped while still connected, and `migrate diff --from-url` is refused.
// A datamodel-to-datamodel diff reads no database, but the CLI's adapter still connects to one,
// so a throw-away embedded PostgreSQL is started for it. Hand-written SQL (functions, triggers)
// goes into its own migration folder and does not touch the snapshot.
// Usage: npm run migration:create -- <name>
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../dist/src/database/embedded.js';

const name = (process.argv[2] ?? '').replace(/[^a-z0-9_]/gi, '_');
if (!name) {
  console.error('usage: npm run migration:create -- <name>');
  process.exit(2);
}
const snapshot = 'prisma/migrations/schema.snapshot.prisma';
const scratch = mkdtempSync(path.join(tmpdir(), 'spendgate-migration-'));
chmodSync(scratch, 0o711);
const out = path.join(scratch, 'migration.sql');
const db = await startEmbeddedPostgres({ dataDir: path.join(scratch, 'db') });
try {
  execFileSync(
    'npx',
    [
      'prisma',
      'migrate',
      'diff',
      '--from-schema-datamodel',
      snapshot,
      '--to-schema-datamodel',
      'prisma/schema.prisma',
      '--script',
      '-o',
      out,
    ],
    { stdio: 'inherit', env: { ...process.env, DATABASE_URL: db.url } },
  );
  const sql = readFileSync(out, 'utf8');
  if (!/\b(CREATE|ALTER|DROP)\b/i.test(sql)) {
    console.log('No schema changes: nothing to create.');
  } else {
    const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
    const dir = path.join('prisma', 'migrations', `${stamp}_${name}`);
    mkdirSync(dir, { recursive: true });
    copyFileSync(out, path.join(dir, 'migration.sql'));
    copyFileSync('prisma/schema.prisma', snapshot);
    console.log(`Created ${dir}/migration.sql; review it, then commit it with the schema.`);
  }
} finally {
  await db.stop();
  rmSync(scratch, { recursive: true, force: true });
}
