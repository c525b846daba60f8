/**
 * A fresh database holding bench:reports' data set (bench/reports-data.ts) at a test's size:
 * `tasks` settled tasks over 90 days and 50 projects, `users` end users, and their roll-ups.
 */
import { Database } from '../../src/database/database.js';
import { freshDatabase } from './harness.js';

export async function reportsDatabase(tasks: number, users: number): Promise<string> {
  // The data set's size is read when its module loads (each test file has its own modules).
  process.env.BENCH_TASKS = String(tasks);
  process.env.BENCH_USERS = String(users);
  const { seed } = await import('../../bench/reports-data.js');
  const url = await freshDatabase();
  const db = new Database(url, 2);
  try {
    await seed(db);
  } finally {
    await db.close();
  }
  return url;
}
