/**
 * `spendgate ledger verify` (decisions §13): recomputes every seal from the entries now in its
 * interval, checks the seals' chain, and checks every closed month's statements against the
 * ledger as it is now. Reports the first entry edited, deleted or inserted after sealing (or after
 * its month's close), whatever a superuser did with the triggers off: digests are computed here,
 * in TypeScript, never by a function in the database.
 */
import type { Database } from '../database/database.js';
import { entriesDigest } from './statement-data.js';
import { parseMonth, type Month } from '../common/month.js';
import { checkSeal, ENTRY_COLUMNS, GENESIS, type EntryRow, type StoredSeal } from '../ledger/ledger-seal.js';

/** The newest seal: the ledger's head, to keep outside the database (as `audit head`'s). */
export interface LedgerHead {
  seq: string;
  hash: string;
}

export async function ledgerHead(db: Pick<Database, 'query'>): Promise<LedgerHead | null> {
  const { rows } = await db.query<{ seq: string; hash: Buffer }>(
    'SELECT seq::text AS seq, hash FROM ledger_seal ORDER BY seq DESC LIMIT 1',
  );
  return rows[0] ? { seq: rows[0].seq, hash: rows[0].hash.toString('hex') } : null;
}

export interface LedgerVerification {
  seals: number;
  sealedEntries: number;
  /** Entries newer than the last seal (sealed by a later round). */
  unsealedEntries: number;
  statements: number;
  problems: string[];
  /** The newest seal verified: its seq and hash. */
  head: LedgerHead | null;
}

/**
 * `keptHead`: a head kept outside the database (`spendgate ledger head`, a statement's foot). Only
 * with it does verify prove that no seal at or before it was deleted or rewritten: without it, a
 * superuser who deletes the newest seals, or edits entries and recomputes every seal with this
 * published algorithm, leaves a chain that verifies.
 */
export async function verifyLedger(
  db: Database,
  keptHead?: Buffer,
  loadArchived?: ArchivedEntriesLoader,
): Promise<LedgerVerification> {
  // One connection throughout: archived months' entries wait in a temporary table of its session.
  return db.inTransaction(async () => {
    await db.query('CREATE TEMP TABLE archived_entries ON COMMIT DROP AS SELECT * FROM ledger_entry WITH NO DATA');
    const { rows } = await db.query<{ months: number }>('SELECT count(*)::int AS months FROM archived_month');
    const archivedProblems =
      rows[0]!.months === 0
        ? []
        : loadArchived
          ? await loadArchived(db, async (entries) => {
              await db.query(
                'INSERT INTO pg_temp.archived_entries SELECT * FROM jsonb_populate_recordset(NULL::ledger_entry, $1::jsonb)',
                [JSON.stringify(entries)],
              );
            })
          : [`${rows[0]!.months} archived month(s): set ARCHIVE_DIR so that their entries are read from their files`];
    const result = await verifyChain(db, keptHead);
    return { ...result, problems: [...archivedProblems, ...result.problems] };
  });
}

/**
 * The ledger with the entries of archived months, read back from their files into this session's
 * temporary table archived_entries (made by verifyLedger, filled by the loader).
 */
const WITH_ARCHIVED = '(SELECT * FROM ledger_entry UNION ALL SELECT * FROM pg_temp.archived_entries)';

/** statement-data's monthDigest, over the ledger with archived months' entries. */
function monthDigestWithArchived(db: Database, projectId: string, month: Month) {
  return entriesDigest(db, WITH_ARCHIVED, projectId, month);
}

/**
 * Reads every archived month's entries from its files (history/), each batch given to `add` (a
 * row of the ledger's columns as text), answering the problems found (a file missing, or not the
 * one its manifest names).
 */
export type ArchivedEntriesLoader = (
  db: Database,
  add: (entries: Array<Record<string, string | null>>) => Promise<void>,
) => Promise<string[]>;

async function verifyChain(db: Database, keptHead?: Buffer): Promise<LedgerVerification> {
  const problems: string[] = [];
  let prev: Buffer = GENESIS;
  let after = 0n;
  let seals = 0;
  let sealedEntries = 0;
  let expectedSeq = 1n;
  let head: LedgerHead | null = null;
  let keptHeadFound = false;
  for (;;) {
    const { rows } = await db.query<{
      seq: string;
      first_id: string;
      last_id: string;
      entry_ids: string[];
      digests: Buffer;
      prev_hash: Buffer;
      hash: Buffer;
    }>(
      'SELECT s.seq::text AS seq, s.first_id::text AS first_id, s.last_id::text AS last_id, s.entry_ids::text[] AS entry_ids, s.digests, s.prev_hash, s.hash FROM ledger_seal s WHERE s.seq >= $1 ORDER BY s.seq LIMIT 20',
      [expectedSeq.toString()],
    );
    if (rows.length === 0) break;
    for (const row of rows) {
      if (BigInt(row.seq) !== expectedSeq || BigInt(row.first_id) !== after + 1n) {
        problems.push(`seal ${row.seq} is out of place: a seal before it was removed or renumbered`);
        return finish();
      }
      const seal: StoredSeal = {
        seq: row.seq,
        lastId: row.last_id,
        entryIds: row.entry_ids,
        digests: row.digests,
        prevHash: row.prev_hash,
        hash: row.hash,
      };
      const entries = (await db.queryArrays(
        `SELECT ${ENTRY_COLUMNS} FROM ${WITH_ARCHIVED} e WHERE e.id > $1 AND e.id <= $2 ORDER BY e.id`,
        [after.toString(), row.last_id],
      )) as EntryRow[];
      const problem = checkSeal(seal, prev, entries);
      if (problem) {
        problems.push(problem);
        return finish();
      }
      prev = row.hash;
      head = { seq: row.seq, hash: row.hash.toString('hex') };
      if (keptHead?.equals(row.hash)) keptHeadFound = true;
      after = BigInt(row.last_id);
      expectedSeq += 1n;
      seals += 1;
      sealedEntries += row.entry_ids.length;
    }
  }
  return finish();

  async function finish(): Promise<LedgerVerification> {
    if (keptHead && !keptHeadFound && problems.length === 0) {
      problems.push(
        `the kept head ${keptHead.toString('hex')} is not in the ledger's chain of seals: a seal at or before it was deleted or rewritten (${seals} seals verify)`,
      );
    }
    const { rows: unsealed } = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM ledger_entry WHERE id > $1',
      [after.toString()],
    );
    // Closed months: each statement in force against the ledger of its project and month now.
    const { rows: statements } = await db.query<{
      project_id: string;
      month: string;
      ledger_digest: Buffer;
      entries: number;
    }>(
      `SELECT s.project_id::text, to_char(s.month, 'YYYY-MM') AS month, s.ledger_digest, s.entries
       FROM statement s JOIN month_close c ON c.id = s.close_id WHERE c.reopened_at IS NULL ORDER BY s.month, s.project_id`,
    );
    for (const s of statements) {
      const now = await monthDigestWithArchived(db, s.project_id, parseMonth('month', s.month));
      if (!now.digest.equals(s.ledger_digest)) {
        problems.push(
          `closed month ${s.month}, project ${s.project_id}: the ledger no longer matches its statement (${s.entries} entries at close, ${now.entries} now): an entry was edited, deleted or inserted after the close`,
        );
      }
    }
    return { seals, sealedEntries, unsealedEntries: unsealed[0]!.n, statements: statements.length, problems, head };
  }
}
