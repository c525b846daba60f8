/**
 * `ledger verify` across archived months (decisions §18): each archived month's ledger entries
 * are read back from its file (checked against its manifest first) into the verifying session's
 * temporary table, so that every seal and every closed month's statement is recomputed from the
 * entries themselves, archived or not.
 */
import path from 'node:path';
import type { ArchivedEntriesLoader } from '../closing/ledger-verify.js';
import { asParquet, columnsOf, monthDir } from './archive-files.js';
import type { ArchiveManifest } from './archive.service.js';
import { eachBatch, fileProblem } from './parquet.js';

export function archivedEntriesLoader(archiveDir: string): ArchivedEntriesLoader {
  return async (db, add) => {
    const { rows: months } = await db.query<{ month: string; manifest: ArchiveManifest }>(
      `SELECT to_char(month, 'YYYY-MM') AS month, manifest FROM archived_month ORDER BY month`,
    );
    const problems: string[] = [];
    const columns = await columnsOf(db, 'ledger_entry');
    for (const { month, manifest } of months) {
      const entry = manifest.files.ledger_entry!;
      const file = path.join(monthDir(path.resolve(archiveDir), month), entry.file);
      const problem = await fileProblem(file, entry.fileSha256);
      if (problem) {
        problems.push(`archived month ${month}: ${problem}`);
        continue;
      }
      await eachBatch(file, asParquet(columns), async (rows) => {
        await add(rows.map((r) => Object.fromEntries(columns.map((c, i) => [c.name, r[i]]))));
      });
    }
    return problems;
  };
}
