/**
 * A close's statements (decisions §13): one a project with activity in the month, written in a
 * transaction of their own after the close has committed (month-close.service.ts says why).
 */
import type { Database } from '../database/database.js';
import type { Month } from '../common/month.js';
import type { LedgerHead } from './ledger-verify.js';
import { statementCsv } from './statement-csv.js';
import { statementData, type OpenItem } from './statement-data.js';
import { statementPdf } from './statement-pdf.js';

/** What a statement says of its close (month-close.service.ts's MonthCloseRow has it). */
interface Close {
  id: string;
  closedAt: Date;
  closedBy: string;
  version: number;
  ledgerHead?: LedgerHead | null;
}

export async function writeStatements(
  db: Database,
  month: Month,
  close: Close,
  projects: string[],
  carried: Array<OpenItem & { projectId: string }>,
): Promise<void> {
  await db.inTransaction(async () => {
    // Not the movements' ROW SHARE: only a close, a reopening or an archive (SHARE) waits. The
    // month's entries cannot change meanwhile: a movement for a closed month posts after it.
    await db.query('LOCK TABLE month_close IN SHARE ROW EXCLUSIVE MODE');
    const { rows } = await db.query('SELECT 1 FROM month_close WHERE id = $1 AND reopened_at IS NULL', [close.id]);
    if (rows.length === 0) return; // reopened in between: a later close writes its own
    for (const projectId of projects) {
      const open = carried
        .filter((c) => c.projectId === projectId)
        .map(({ projectId: _p, ...item }) => ({ ...item, acceptedAt: new Date(item.acceptedAt).toISOString() }));
      const data = await statementData(
        db,
        projectId,
        month,
        { closedAt: close.closedAt, closedBy: close.closedBy, version: close.version, ledgerHead: close.ledgerHead },
        open,
      );
      await db.query(
        `INSERT INTO statement (close_id, project_id, month, ledger_digest, entries, body, csv, pdf) VALUES ($1, $2, $3::date, $4, $5, $6::jsonb, $7, $8)`,
        [
          close.id,
          projectId,
          month.day,
          Buffer.from(data.ledgerDigest, 'hex'),
          data.entries,
          JSON.stringify(data),
          statementCsv(data),
          await statementPdf(data),
        ],
      );
    }
  });
}
