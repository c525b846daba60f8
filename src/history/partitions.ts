/**
 * Monthly partitions made ahead (decisions §18). migrate makes the month now and PARTITIONS_AHEAD
 * more; every instance asks again each hour, so a month's partition exists long before its first
 * task. spendgate_make_partitions takes a lock, so instances never race, and one that finds the work
 * done makes nothing. Should every instance be down across a month's start, the month's writes land
 * in each table's default partition and move into the month's own when it is made.
 */
import { Logger } from '@nestjs/common';
import type { Database } from '../database/database.js';

export const PARTITIONS_EVERY_MS = 3_600_000;

/** The partitions made (none when they all existed). */
export async function makePartitions(
  db: Database,
  ahead: number,
  logger = new Logger('Partitions'),
): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>('SELECT spendgate_make_partitions($1) AS name', [ahead]);
  for (const { name } of rows) logger.log(`made partition ${name}`);
  return rows.map((r) => r.name);
}
