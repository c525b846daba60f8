/**
 * What the database benches share: a throw-away, migrated embedded PostgreSQL that is stopped and
 * deleted however the bench ends, the machine line every result carries, and publishing a result
 * (printed, and written to bench/results/<name>.json).
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../src/database/embedded.js';
import { migrate } from '../src/database/migrate.js';
import { INDEX_USAGE_SETTINGS, recordIndexUsage } from './index-usage.js';

export async function withScratchPostgres<T>(
  name: string,
  settings: string[],
  fn: (server: EmbeddedDatabase, dataDir: string) => Promise<T>,
): Promise<T> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `spendgate-${name}-`));
  chmodSync(dir, 0o711); // the server may run as another user, which must reach its cluster below
  const all = [...settings, ...INDEX_USAGE_SETTINGS];
  const server = await startEmbeddedPostgres({ dataDir: dir, ...(all.length ? { settings: all } : {}) });
  try {
    await migrate(server.url);
    const result = await fn(server, dir);
    await recordIndexUsage(server.url, name);
    return result;
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** CPU model, cores and memory: the start of every result's `machine`. */
export function machine(): string {
  return `${os.cpus()[0]?.model ?? 'cpu'} (${os.cpus().length} cores), ${Math.round(os.totalmem() / 2 ** 30)} GiB`;
}

/**
 * Milliseconds a fixed single-threaded loop takes now: lower is faster. This VM's speed moves by up
 * to 60 % between hours (the same loop: 0.92 s and 1.47 s on 2026-11-22), so a result carries the
 * probe from its start and end, and figures are compared only within one run.
 */
export function speedProbe(): number {
  const start = performance.now();
  let x = 0;
  for (let i = 0; i < 100_000_000; i++) x = (x + i) % 1_000_003;
  if (x < 0) throw new Error('unreachable'); // keeps the loop from being optimised away
  return Math.round(performance.now() - start);
}

/** The middle value (the upper one of an even count), the input left unsorted. */
export function median(xs: number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
}

export function publish(name: string, out: unknown): void {
  console.log(JSON.stringify(out, null, 2));
  mkdirSync('bench/results', { recursive: true });
  writeFileSync(`bench/results/${name}.json`, JSON.stringify(out, null, 2) + '\n');
}
