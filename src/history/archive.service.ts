/**
 * Archiving a closed month (decisions §18; `spendgate archive YYYY-MM`, `archive restore`,
 * `archive list`, GraphQL archivedMonths). Archive: the month's partitions are locked against
 * change, their rows written to Parquet in ARCHIVE_DIR/YYYY-MM with a manifest (rows, digests, the
 * ledger's seal head, the month's statements), read back and compared, and only then dropped, in
 * the same transaction, with what budgets need of them kept (spendgate_archive_month). Restore:
 * the files are checked against the manifest and their rows written back into partitions with
 * the bounds they had. Both are audited as whoever ran them.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { actorNamed, type Actor } from '../auth/audit-sink.js';
import type { ClientInfo } from '../auth/sessions.service.js';
import { AuditService } from '../audit/audit.service.js';
import { ChangesService } from '../audit/changes.service.js';
import { ledgerHead } from '../closing/ledger-verify.js';
import { parseMonth, type Month } from '../common/month.js';
import { ApiError } from '../common/api-error.js';
import type { Config } from '../config/config.js';
import type { Database } from '../database/database.js';
import { dec, type Decimal } from '../pricing/money.js';
import { lockArchivedMonths } from '../tasks/archived-tasks.js';
import {
  ARCHIVED_TABLES,
  asParquet,
  columnsOf,
  COST_COLUMNS,
  COSTS_FILE,
  costRows,
  insertRows,
  copyPartitions,
  monthDir,
} from './archive-files.js';
import { copyToParquet, eachBatch, fileProblem, readBack, writeParquet, type WrittenFile } from './parquet.js';

export interface ArchiveManifest {
  format: 'spendgate-archive/1';
  month: string;
  files: Record<string, WrittenFile & { file: string }>;
  partitions: Array<{ table: string; name: string; bound: string }>;
  taskIds: string;
  ledgerSealHead: { seq: string; hash: string } | null;
  statements: Array<{ projectId: string; ledgerDigest: string; entries: number }>;
}

export interface ArchivedMonthView {
  month: string;
  archivedAt: Date;
  archivedBy: string;
  tasks: number;
  ledgerEntries: number;
  keptTasks: number;
  rows: number;
  digests: Array<{ file: string; rows: number; sha256: string }>;
  directory: string;
}

export const archiveOptions = (config: Config) => ({
  archiveDir: config.ARCHIVE_DIR,
  vendorName: config.VENDOR_NAME,
  ...(config.CREDITS_PER_USD ? { creditsPerUsd: dec(config.CREDITS_PER_USD) } : {}),
});

/** A month's weeks and days are over a week after it ends: no budget period still open holds part of it. */
const SETTLED_AFTER_MS = 7 * 86_400_000;

export class ArchiveService {
  constructor(
    private readonly db: Database,
    private readonly changes: ChangesService,
    private readonly options: { archiveDir: string | undefined; vendorName: string; creditsPerUsd?: Decimal },
  ) {}

  /** Outside the gateway's modules (the CLI, the money model): audited in `db`, with `config`'s options. */
  static on(db: Database, config: Config): ArchiveService {
    return new ArchiveService(db, new ChangesService(db, new AuditService(db)), archiveOptions(config));
  }

  private dir(): string {
    if (!this.options.archiveDir)
      throw ApiError.badRequest('ARCHIVE_DIR is not set: name the directory archives are written to and read from');
    return path.resolve(this.options.archiveDir);
  }

  async archive(label: string, actor: Actor, client: ClientInfo): Promise<ArchivedMonthView> {
    const month = parseMonth('month', label);
    const root = this.dir();
    if (Date.now() < month.end.getTime() + SETTLED_AFTER_MS)
      throw ApiError.conflict(
        `month ${month.label}: it can be archived from ${new Date(month.end.getTime() + SETTLED_AFTER_MS).toISOString()}, when no budget period holds part of it`,
      );
    const work = path.join(root, `.${month.label}.${randomBytes(6).toString('hex')}`);
    try {
      return await this.changes.run(
        actor,
        client,
        (v: ArchivedMonthView) => ({
          action: 'month.archive',
          targetKind: 'month',
          targetId: month.label,
          after: { tasks: v.tasks, ledgerEntries: v.ledgerEntries, keptTasks: v.keptTasks, directory: v.directory },
        }),
        async () => {
          await lockArchivedMonths(this.db, 'exclusive');
          await this.requireArchivable(month);
          // Made only now: a refused archive leaves no directory behind, ARCHIVE_DIR's own included.
          await mkdir(work, { recursive: true });
          const manifest = await this.writeFiles(month, work);
          const final = monthDir(root, month.label);
          await rm(final, { recursive: true, force: true });
          await rename(work, final);
          await this.db.query('SELECT spendgate_archive_month($1::date, $2, $3::jsonb)', [
            month.day,
            actorNamed(actor).label,
            JSON.stringify(manifest),
          ]);
          return (await this.list()).find((m) => m.month === month.label)!;
        },
      );
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  private async requireArchivable(month: Month): Promise<void> {
    // Text the same in every session: the files of a month are the same bytes every time.
    await this.db.query("SELECT set_config('TimeZone', 'UTC', true), set_config('DateStyle', 'ISO, YMD', true)");
    const { rows } = await this.db.query<{ closed: boolean; archived: boolean; unwritten: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM month_close WHERE month = $1::date AND reopened_at IS NULL) AS closed,
              EXISTS (SELECT 1 FROM archived_month WHERE month = $1::date) AS archived,
              EXISTS (SELECT 1 FROM month_close c WHERE c.month = $1::date AND c.reopened_at IS NULL
                        AND NOT EXISTS (SELECT 1 FROM statement s WHERE s.close_id = c.id))
                AND EXISTS (SELECT 1 FROM ledger_entry e WHERE e.effective_at >= $2 AND e.effective_at < $3) AS unwritten`,
      [month.day, month.start, month.end],
    );
    if (rows[0]!.archived) throw ApiError.conflict(`month ${month.label}: already archived`);
    if (!rows[0]!.closed)
      throw ApiError.conflict(`month ${month.label}: only a closed month is archived (close it first)`);
    // Its statements are written after its close commits (closing/close-statements.ts); archived
    // without them, its entries would be gone before they were.
    if (rows[0]!.unwritten)
      throw ApiError.conflict(
        `month ${month.label}: its close was interrupted before its statements were written: an owner reopens it and closes it again first`,
      );
    const { rows: unsealed } = await this.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ledger_entry
       WHERE effective_at >= $1 AND effective_at < $2 AND id > coalesce((SELECT max(last_id) FROM ledger_seal), 0)`,
      [month.start, month.end],
    );
    if (unsealed[0]!.n > 0)
      throw ApiError.conflict(
        `month ${month.label}: ${unsealed[0]!.n} of its ledger entries are not sealed yet (run \`spendgate ledger seal\`, or wait for the gateway's next seal)`,
      );
    // Its partitions exist (rows written while they did not wait in the defaults, and move now), and
    // nothing in them changes until they are dropped.
    for (const table of ARCHIVED_TABLES)
      await this.db.query('SELECT spendgate_month_partition($1, $2::date)', [table.table, month.day]);
    await this.db.query('SELECT spendgate_lock_month_partitions($1::date)', [month.day]);
  }

  private async partitions(month: Month) {
    const { rows } = await this.db.query<{ table: string; name: string; bound: string }>(
      'SELECT table_name AS table, partition_name AS name, bound FROM spendgate_month_partitions($1::date)',
      [month.day],
    );
    return rows;
  }

  private async writeFiles(month: Month, work: string): Promise<ArchiveManifest> {
    const files: ArchiveManifest['files'] = {};
    const parts = await this.partitions(month);
    for (const t of ARCHIVED_TABLES) {
      const columns = await columnsOf(this.db, t.table);
      const mine = parts.filter((p) => p.table === t.table).map((p) => p.name);
      const file = path.join(work, t.file);
      const copied = await copyToParquet(file, `${file}.csv`, asParquet(columns), (sink) =>
        this.db.transaction((client) => copyPartitions(client, mine, t, columns, sink)),
      );
      this.compare(file, copied.written, copied.readBack);
      files[t.table] = { file: t.file, ...copied.written };
    }
    const costs = path.join(work, COSTS_FILE);
    const focus = { from: month.start, to: month.end, vendorName: this.options.vendorName };
    const written = await writeParquet(
      costs,
      `${costs}.csv`,
      COST_COLUMNS,
      costRows(this.db, this.options.creditsPerUsd ? { ...focus, creditsPerUsd: this.options.creditsPerUsd } : focus),
    );
    this.compare(costs, written, await readBack(costs, COST_COLUMNS));
    files.costs = { file: COSTS_FILE, ...written };
    const { rows: ids } = await this.db.query<{ ids: string }>(
      `SELECT coalesce(range_agg(task_ids), '{}')::text AS ids FROM spendgate_month_partitions($1::date) WHERE table_name = 'task'`,
      [month.day],
    );
    const { rows: statements } = await this.db.query<{ projectId: string; ledgerDigest: string; entries: number }>(
      `SELECT s.project_id::text AS "projectId", encode(s.ledger_digest, 'hex') AS "ledgerDigest", s.entries
       FROM statement s JOIN month_close c ON c.id = s.close_id WHERE c.month = $1::date AND c.reopened_at IS NULL ORDER BY s.project_id`,
      [month.day],
    );
    const manifest: ArchiveManifest = {
      format: 'spendgate-archive/1',
      month: month.label,
      files,
      partitions: parts.map((p) => ({ table: p.table, name: p.name, bound: p.bound })),
      taskIds: ids[0]!.ids,
      ledgerSealHead: await ledgerHead(this.db),
      statements,
    };
    await writeFile(path.join(work, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    return manifest;
  }

  /** What DuckDB reads back is what was written, row for row. */
  private compare(file: string, written: WrittenFile, back: Pick<WrittenFile, 'rows' | 'rowsSha256'>): void {
    if (back.rows !== written.rows || back.rowsSha256 !== written.rowsSha256)
      throw ApiError.conflict(
        `${path.basename(file)}: read back ${back.rows} rows (digest ${back.rowsSha256}), wrote ${written.rows} (digest ${written.rowsSha256}): nothing was dropped`,
      );
  }

  async restore(label: string, actor: Actor, client: ClientInfo): Promise<ArchivedMonthView> {
    const month = parseMonth('month', label);
    const dir = monthDir(this.dir(), month.label);
    const before = (await this.list()).find((m) => m.month === month.label);
    if (!before) throw ApiError.notFound(`month ${month.label}: not archived`);
    const manifest = await this.manifestOf(month);
    for (const f of Object.values(manifest.files)) {
      const problem = await fileProblem(path.join(dir, f.file), f.fileSha256);
      if (problem) throw ApiError.conflict(`${problem}; nothing was restored`);
    }
    return this.changes.run(
      actor,
      client,
      { action: 'month.restore', targetKind: 'month', targetId: month.label, after: { directory: dir } },
      async () => {
        await lockArchivedMonths(this.db, 'exclusive');
        await this.db.query('LOCK TABLE month_close IN SHARE MODE');
        for (const p of manifest.partitions)
          await this.db.query('SELECT spendgate_add_partition($1, $2, $3)', [p.table, p.name, p.bound]);
        await this.db.query("SELECT set_config('spendgate.moving_rows', 'on', true)");
        for (const t of ARCHIVED_TABLES) {
          const columns = await columnsOf(this.db, t.table);
          await eachBatch(path.join(dir, t.file), asParquet(columns), async (rows) => {
            await insertRows(this.db, t.table, rows);
          });
        }
        await this.db.query("SELECT set_config('spendgate.moving_rows', '', true)");
        await this.db.query('DELETE FROM archived_spend WHERE month = $1::date', [month.day]);
        await this.db.query('DELETE FROM archived_balance WHERE month = $1::date', [month.day]);
        await this.db.query('DELETE FROM archived_month WHERE month = $1::date', [month.day]);
        return before;
      },
    );
  }

  private async manifestOf(month: Month): Promise<ArchiveManifest> {
    const { rows } = await this.db.query<{ manifest: ArchiveManifest }>(
      'SELECT manifest FROM archived_month WHERE month = $1::date',
      [month.day],
    );
    return rows[0]!.manifest;
  }

  /** Newest month first. */
  async list(): Promise<ArchivedMonthView[]> {
    const { rows } = await this.db.query<{
      month: string;
      archived_at: Date;
      archived_by: string;
      manifest: ArchiveManifest & { keptTasks?: number };
    }>(
      `SELECT to_char(month, 'YYYY-MM') AS month, archived_at, archived_by, manifest FROM archived_month ORDER BY month DESC`,
    );
    return rows.map((r) => ({
      month: r.month,
      archivedAt: r.archived_at,
      archivedBy: r.archived_by,
      tasks: r.manifest.files.task?.rows ?? 0,
      ledgerEntries: r.manifest.files.ledger_entry?.rows ?? 0,
      keptTasks: r.manifest.keptTasks ?? 0,
      rows: Object.values(r.manifest.files).reduce((n, f) => n + f.rows, 0),
      digests: Object.values(r.manifest.files).map((f) => ({ file: f.file, rows: f.rows, sha256: f.fileSha256 })),
      directory: this.options.archiveDir ? monthDir(path.resolve(this.options.archiveDir), r.month) : r.month,
    }));
  }
}
