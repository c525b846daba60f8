/**
 * The ledger's seals (decisions §13), plain TypeScript: the sealer and `spendgate ledger verify`
 * compute the same bytes here. An entry's digest is SHA-256 of its fields in a fixed order, each
 * as the database's text (amounts exactly as stored, times in UTC with microseconds), separated by
 * a unit separator, a missing value written as a record separator. A seal covers the entries with
 * ids in (previous seal's last id, its last id]: their ids, their digests, and
 * hash = SHA-256(previous seal's hash ‖ every digest in id order), the first chained to 32 zero bytes.
 */
import type { Unit } from '../pricing/money.js';
import { createHash } from 'node:crypto';

/** An entry as the database gives it for hashing (see ENTRY_COLUMNS). */
export type EntryRow = [
  id: string,
  projectId: string,
  taskId: string | null,
  kind: string,
  unit: Unit,
  amount: string,
  effectiveAt: string,
  createdAt: string,
  reason: string | null,
  belongsTo: string | null,
];

/** The columns of EntryRow, as text, for `SELECT ${ENTRY_COLUMNS} FROM ledger_entry e`. */
export const ENTRY_COLUMNS = `e.id::text, e.project_id::text, e.task_id::text, e.kind::text, e.unit::text, e.amount::text,
  to_char(e.effective_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  e.reason, e.belongs_to::text`;

/**
 * The same digest computed by the database (the sealer's way: 1M entries in seconds, off the
 * gateway's event loop). `ledger verify` computes it with entryDigest instead, so the two
 * implementations check each other.
 */
export const ENTRY_DIGEST_SQL = `sha256(convert_to(concat_ws(chr(31), e.id::text, e.project_id::text, coalesce(e.task_id::text, chr(30)), e.kind::text, e.unit::text, e.amount::text,
  to_char(e.effective_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  coalesce(e.reason, chr(30)), coalesce(e.belongs_to::text, chr(30))), 'UTF8'))`;

export const GENESIS: Buffer = Buffer.alloc(32);
const UNIT = '\u001f';
const MISSING = '\u001e';

export function entryDigest(row: EntryRow): Buffer {
  return createHash('sha256')
    .update(row.map((v) => v ?? MISSING).join(UNIT), 'utf8')
    .digest();
}

export function sealHash(prevHash: Buffer, digests: Buffer): Buffer {
  return createHash('sha256').update(prevHash).update(digests).digest();
}

/**
 * SHA-256 over entries' digests in id order: a statement's "digest of the ledger it covers", given
 * the entries a page at a time (a month can be millions of them).
 */
export function ledgerDigester(): { add(rows: EntryRow[]): void; digest(): Buffer } {
  const hash = createHash('sha256');
  return {
    add: (rows) => {
      for (const row of rows) hash.update(entryDigest(row));
    },
    digest: () => hash.digest(),
  };
}

export interface StoredSeal {
  seq: string;
  lastId: string;
  entryIds: string[];
  digests: Buffer;
  prevHash: Buffer;
  hash: Buffer;
}

/**
 * Compares one seal with the entries now in its interval (in id order) and names the first
 * difference: an entry edited (its digest changed), deleted (sealed, now missing) or inserted
 * (present, never sealed). `prevHash`: the previous seal's hash as verify recomputed it.
 */
export function checkSeal(seal: StoredSeal, prevHash: Buffer, entries: EntryRow[]): string | null {
  if (!seal.prevHash.equals(prevHash))
    return `seal ${seal.seq} does not chain to the seal before it: a seal was removed, replaced or reordered`;
  if (!sealHash(seal.prevHash, seal.digests).equals(seal.hash))
    return `seal ${seal.seq} does not match its own hash: the seal itself was edited`;
  const present = new Map(entries.map((e) => [e[0], e]));
  for (const [i, id] of seal.entryIds.entries()) {
    const entry = present.get(id);
    if (!entry) return `ledger entry ${id} was deleted after it was sealed (seal ${seal.seq})`;
    if (!entryDigest(entry).equals(seal.digests.subarray(i * 32, i * 32 + 32)))
      return `ledger entry ${id} was edited after it was sealed (seal ${seal.seq})`;
  }
  const sealed = new Set(seal.entryIds);
  const extra = entries.find((e) => !sealed.has(e[0]));
  if (extra) return `ledger entry ${extra[0]} was inserted into a sealed interval (seal ${seal.seq})`;
  return null;
}
