/**
 * What the tamper-evidence tests share: a `spendgate` command against a database (its exit code and
 * everything it printed), and statements run as a superuser with the triggers off (what the audit
 * chain's and the ledger seals' verification must catch).
 */
import { spawnSync } from 'node:child_process';
import pg from 'pg';

export function runCli(databaseUrl: string, args: string[]): { code: number | null; out: string } {
  const run = spawnSync(process.execPath, ['dist/src/cli/main.js', ...args], {
    env: { PATH: process.env.PATH, DATABASE_URL: databaseUrl },
    encoding: 'utf8',
  });
  return { code: run.status, out: `${run.stdout}${run.stderr}` };
}

export async function asSuperuser(databaseUrl: string, statements: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('BEGIN');
    await client.query('SET LOCAL session_replication_role = replica');
    for (const s of statements) await client.query(s);
    await client.query('COMMIT');
  } finally {
    await client.end();
  }
}
