/**
 * `spendgate archive YYYY-MM` (a closed month's tasks, charge lines and ledger entries to Parquet
 * in ARCHIVE_DIR, verified, then its partitions dropped), `spendgate archive restore YYYY-MM` and
 * `spendgate archive list` (decisions §18). Audited as the CLI.
 */
import { loadConfig } from '../../config/config.js';
import { ArchiveService, type ArchivedMonthView } from '../../history/archive.service.js';
import { cliActor, UsageError, withDatabase } from '../cli-support.js';

const service = (db: Parameters<Parameters<typeof withDatabase>[0]>[0]) =>
  ArchiveService.on(db, loadConfig(process.env));

const line = (m: ArchivedMonthView) =>
  `${m.month}: ${m.tasks} tasks, ${m.ledgerEntries} ledger entries, ${m.keptTasks} kept in the database; archived ${m.archivedAt.toISOString()} by ${m.archivedBy}; ${m.directory}\n`;

export async function archive(args: string[]): Promise<number> {
  const [what, month, ...rest] = args;
  if (what === 'list' && month === undefined) {
    const months = await withDatabase((db) => service(db).list());
    if (months.length === 0) process.stdout.write('no month is archived\n');
    for (const m of months) process.stdout.write(line(m));
    return 0;
  }
  if (what === 'restore' && month !== undefined && rest.length === 0) {
    const { actor, client } = cliActor();
    const restored = await withDatabase((db) => service(db).restore(month, actor, client));
    process.stdout.write(
      `restored ${restored.month}: ${restored.tasks} tasks, ${restored.ledgerEntries} ledger entries\n`,
    );
    return 0;
  }
  if (what !== undefined && month === undefined && /^\d{4}-\d{2}$/.test(what)) {
    const { actor, client } = cliActor();
    const archived = await withDatabase((db) => service(db).archive(what, actor, client));
    process.stdout.write(`archived ${line(archived)}`);
    return 0;
  }
  throw new UsageError('archive YYYY-MM  |  archive restore YYYY-MM  |  archive list');
}
