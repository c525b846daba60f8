/**
 * The audit trail (decisions §12): one record per change, written in the change's own
 * transaction (it joins the one Database.inTransaction opened, see changes.service.ts), so there
 * is never a change without its record or a record without its change. Records are chained
 * (audit-chain.ts) under a transaction lock, so two instances writing at once still make one line;
 * the table refuses UPDATE, DELETE and TRUNCATE, and `spendgate audit verify` finds what a
 * superuser changed with the triggers off. Secrets never reach a record: callers pass what they
 * changed without them, and before/after are stripped of any key, token or secret field here too.
 */
import { Inject, Injectable } from '@nestjs/common';
import { Database, DATABASE } from '../database/database.js';
import { actorNamed, type Actor, type AuditEntry, type AuditSink } from '../auth/audit-sink.js';
import { redactSecret } from '../auth/api-keys.js';
import { canonicalJson, chainHash, GENESIS, type AuditContent, type ChainRecord } from './audit-chain.js';
import type { ClientInfo } from '../auth/sessions.service.js';

/** pg_advisory_xact_lock key of the chain: one writer at a time appends. */
const CHAIN_LOCK = 72_707_370;
const SECRET_FIELDS = /^(secret|token|password|hash|apiKey|clientSecret|cookie|codeVerifier)$/i;

@Injectable()
export class AuditService implements AuditSink {
  constructor(@Inject(DATABASE) private readonly db: Database) {}

  /** Appends one record, in the transaction of the async context if there is one (it should be). */
  async record(actor: Actor, entry: AuditEntry, client: ClientInfo): Promise<void> {
    const who = actorNamed(actor);
    await this.db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [CHAIN_LOCK]);
      // ORDER BY the column, not the text output column of the same name ("9" > "10" as text).
      const { rows } = await tx.query<{ seq: string; hash: Buffer }>(
        'SELECT a.seq::text AS seq, a.hash FROM audit_record a ORDER BY a.seq DESC LIMIT 1',
      );
      const prevHash = rows[0]?.hash ?? GENESIS;
      const content: AuditContent = {
        seq: String(BigInt(rows[0]?.seq ?? '0') + 1n),
        at: new Date().toISOString(),
        actorKind: who.kind,
        actorId: who.id,
        actor: who.label,
        action: entry.action,
        targetKind: entry.targetKind ?? null,
        targetId: entry.targetId ?? null,
        projectId: entry.projectId ?? null,
        before: entry.before === undefined ? null : canonicalJson(scrub(entry.before)),
        after: entry.after === undefined ? null : canonicalJson(scrub(entry.after)),
        requestId: client.requestId,
        clientAddress: client.clientAddress,
        userAgent: client.userAgent === null ? null : client.userAgent.slice(0, 300),
      };
      await tx.query(
        `INSERT INTO audit_record (seq, at, actor_kind, actor_id, actor, action, target_kind, target_id, project_id, before, after,
                                   request_id, client_address, user_agent, prev_hash, hash)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
        [
          content.seq,
          content.at,
          content.actorKind,
          content.actorId,
          content.actor,
          content.action,
          content.targetKind,
          content.targetId,
          content.projectId,
          content.before,
          content.after,
          content.requestId,
          content.clientAddress,
          content.userAgent,
          prevHash,
          chainHash(prevHash, content),
        ],
      );
    });
  }

  /** Every record in chain order, a page at a time (for verify and the CSV export). */
  async *all(pageSize = 5_000): AsyncGenerator<ChainRecord> {
    let after = 0n;
    for (;;) {
      const { rows } = await this.db.query<RecordRow>(`${SELECT} WHERE a.seq > $1 ORDER BY a.seq LIMIT $2`, [
        after.toString(),
        pageSize,
      ]);
      for (const row of rows) yield toRecord(row);
      if (rows.length < pageSize) return;
      after = BigInt(rows.at(-1)!.seq);
    }
  }

  /** The last record's seq and hash: the head to keep elsewhere. */
  async head(): Promise<{ seq: string; hash: string } | null> {
    const { rows } = await this.db.query<{ seq: string; hash: Buffer }>(
      'SELECT a.seq::text AS seq, a.hash FROM audit_record a ORDER BY a.seq DESC LIMIT 1',
    );
    return rows[0] ? { seq: rows[0].seq, hash: rows[0].hash.toString('hex') } : null;
  }
}

interface RecordRow {
  seq: string;
  /** The column's every microsecond, as text (a Date would drop them). */
  at: string;
  actor_kind: string;
  actor_id: string | null;
  actor: string;
  action: string;
  target_kind: string | null;
  target_id: string | null;
  project_id: string | null;
  before: string | null;
  after: string | null;
  request_id: string | null;
  client_address: string | null;
  user_agent: string | null;
  prev_hash: Buffer;
  hash: Buffer;
}

/** Every column, the table aliased `a`: order and filter by a.seq (the bigint), never the text output seq. */
export const SELECT = `SELECT a.seq::text AS seq, to_char(a.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at, a.actor_kind, a.actor_id, a.actor, a.action, a.target_kind, a.target_id, a.project_id::text AS project_id,
  a.before, a.after, a.request_id, a.client_address, a.user_agent, a.prev_hash, a.hash FROM audit_record a`;

export function toRecord(r: RecordRow): ChainRecord {
  return {
    seq: r.seq,
    at: chainedAt(r.at),
    actorKind: r.actor_kind,
    actorId: r.actor_id,
    actor: r.actor,
    action: r.action,
    targetKind: r.target_kind,
    targetId: r.target_id,
    projectId: r.project_id,
    before: r.before,
    after: r.after,
    requestId: r.request_id,
    clientAddress: r.client_address,
    userAgent: r.user_agent,
    prevHash: r.prev_hash,
    hash: r.hash,
  };
}

export type { RecordRow };

/**
 * `at` as the chain hashed it: the writer writes milliseconds (a Date's ISO text), so a stored
 * instant whose microseconds are not 000 was edited, and keeps them here, so that its hash no
 * longer matches (an edit of 400 µs verified while `at` was read as a Date).
 */
function chainedAt(text: string): string {
  return text.endsWith('000Z') ? `${text.slice(0, 23)}Z` : text;
}

/** Before/after without secrets: fields named like one are dropped, secret-shaped strings redacted. */
function scrub(value: unknown): unknown {
  if (typeof value === 'string') return redactSecret(value);
  if (Array.isArray(value)) return value.map(scrub);
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([k]) => !SECRET_FIELDS.test(k))
        .map(([k, v]) => [k, scrub(v)]),
    );
  }
  return value;
}
