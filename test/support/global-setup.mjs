// One embedded PostgreSQL for the whole suite; every test file gets its own fresh database.
// Plain ESM on the compiled build (npm test builds first): Jest's globalSetup does not go
// through the TypeScript transform or the module mapper.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startEmbeddedPostgres } from '../../dist/src/database/embedded.js';
import { INDEX_USAGE_SETTINGS } from '../../dist/bench/index-usage.js';

export default async function globalSetup() {
  const dir = path.resolve('.test-data');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const db = await startEmbeddedPostgres({
    dataDir: dir,
    database: 'postgres',
    // Durability is not under test; concurrency and correctness are (locks behave the same).
    settings: ['fsync=off', 'synchronous_commit=off', 'full_page_writes=off', 'max_connections=400', ...INDEX_USAGE_SETTINGS],
  });
  writeFileSync(path.join(dir, 'url'), db.url);
  mkdirSync(path.join(dir, 'gateways')); // the test gateways' data directories (harness.ts)
  globalThis.__SPENDGATE_PG__ = db;
}
