import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { recordIndexUsage } from '../../dist/bench/index-usage.js';

export default async function globalTeardown() {
  // INDEX_USAGE=<file>: what the suite's databases used of their indexes (bench/index-usage.ts).
  if (process.env.INDEX_USAGE) await recordIndexUsage(readFileSync(path.resolve('.test-data', 'url'), 'utf8'), 'npm test');
  await globalThis.__SPENDGATE_PG__?.stop();
  rmSync(path.resolve('.test-data', 'gateways'), { recursive: true, force: true });
}
