/**
 * The audit trail's chain (decisions §12), plain TypeScript: each record's hash is
 * SHA-256(previous record's hash ‖ the record's canonical content). The canonical content is a
 * JSON array of the record's fields in a fixed order, every value a string or null, so the
 * writer and `spendgate audit verify` compute the same bytes whatever the database's JSON does.
 * `before` and `after` are stored as canonical JSON text (keys sorted) for the same reason.
 */
import { createHash } from 'node:crypto';

export interface AuditContent {
  seq: string;
  /** ISO-8601 with milliseconds, UTC: the instant as written. */
  at: string;
  actorKind: string;
  actorId: string | null;
  actor: string;
  action: string;
  targetKind: string | null;
  targetId: string | null;
  projectId: string | null;
  before: string | null;
  after: string | null;
  requestId: string | null;
  clientAddress: string | null;
  userAgent: string | null;
}

/** The hash before the first record. */
export const GENESIS = Buffer.alloc(32);

const FIELDS = [
  'seq',
  'at',
  'actorKind',
  'actorId',
  'actor',
  'action',
  'targetKind',
  'targetId',
  'projectId',
  'before',
  'after',
  'requestId',
  'clientAddress',
  'userAgent',
] as const;

export function canonicalContent(record: AuditContent): string {
  return JSON.stringify(FIELDS.map((field) => record[field]));
}

export function chainHash(prevHash: Buffer, record: AuditContent): Buffer<ArrayBufferLike> {
  return createHash('sha256').update(prevHash).update(canonicalContent(record), 'utf8').digest();
}

/** JSON with keys sorted at every level: the same value always gives the same text. */
export function canonicalJson(value: unknown): string {
  if (value === undefined) return 'null';
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`);
  return `{${entries.join(',')}}`;
}

export interface ChainRecord extends AuditContent {
  prevHash: Buffer;
  hash: Buffer;
}

export type ChainProblem = { seq: string; problem: string };

/**
 * Walks records in seq order from the start (or from `head`'s record) and names the first one
 * that does not chain: edited (its hash is not its content's), inserted or deleted (its prev_hash
 * is not the previous record's hash, or its seq is not the next), moved (the same). Returns null
 * when every record chains. `expectHead`: a hash kept elsewhere, which must still be in the chain.
 */
export async function verifyChain(
  records: AsyncIterable<ChainRecord> | Iterable<ChainRecord>,
  expectHead?: Buffer,
): Promise<{ checked: number; head: ChainRecord | null; problem: ChainProblem | null }> {
  let prev: Buffer = GENESIS;
  let expectedSeq = 1n;
  let checked = 0;
  let head: ChainRecord | null = null;
  let headSeen = expectHead === undefined;
  for await (const r of records) {
    if (BigInt(r.seq) !== expectedSeq) {
      return {
        checked,
        head,
        problem: {
          seq: r.seq,
          problem: `follows record ${expectedSeq - 1n}: a record is missing or out of place before it`,
        },
      };
    }
    if (!r.prevHash.equals(prev)) {
      return {
        checked,
        head,
        problem: {
          seq: r.seq,
          problem: 'does not chain to the record before it: that one, or this one, was inserted, deleted or moved',
        },
      };
    }
    if (!chainHash(prev, r).equals(r.hash)) {
      return { checked, head, problem: { seq: r.seq, problem: 'its content does not match its hash: it was edited' } };
    }
    if (expectHead && r.hash.equals(expectHead)) headSeen = true;
    prev = r.hash;
    expectedSeq += 1n;
    checked += 1;
    head = r;
  }
  if (!headSeen)
    return {
      checked,
      head,
      problem: {
        seq: head?.seq ?? '0',
        problem: 'the head kept elsewhere is not in the chain: records up to it were changed or removed',
      },
    };
  return { checked, head, problem: null };
}
