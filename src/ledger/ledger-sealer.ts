/**
 * Seals the ledger in the background (decisions §13), never on the submission path: its own
 * connection, one instance at a time (a transaction-scoped advisory lock), every LEDGER_SEAL_MS.
 *
 * A seal must never cover ids that can still receive a row. Ledger ids come from a sequence, so a
 * transaction can take id 100, another take 101 and commit, and the first commit later. Hence two
 * steps: a round first marks the highest committed id and then the time; a later round seals up to
 * that mark only once no transaction of this database that began before the mark is still
 * running (pg_stat_activity). Every id at or below the mark then belongs to a committed entry or
 * to none, forever; a row that appears there later is an insertion `ledger verify` reports.
 * (A session of another database user whose activity we may not read is not seen: run the
 * gateway, the CLI and any tool that writes the ledger as one user.)
 */
import type pg from 'pg';
import type { Database } from '../database/database.js';
import { ENTRY_DIGEST_SQL, GENESIS, sealHash } from './ledger-seal.js';

/** pg_try_advisory_xact_lock key: one sealer at a time over all instances. */
const SEAL_LOCK = 72_707_371;
/** Entries per seal: one short transaction each (about 0.1 s), ids and digests under 0.5 MB. */
export const SEAL_SIZE = 10_000;

export class LedgerSealer {
  /**
   * `restRatio`: after each seal, rest this many times as long as it took (the gateway's 0.5: the
   * sealer works at most two thirds of the time, measured in bench/seal.bench.ts; the CLI's and
   * tests' 0: as fast as it can).
   */
  constructor(
    private readonly db: Database,
    private readonly restRatio = 0,
  ) {}

  /**
   * One round: seal what the last mark allows (if it does), a seal per short transaction (a long
   * one would hold back the clean-up of the budget rows every hold updates), then mark again.
   * Returns the entries sealed.
   */
  async round(): Promise<number> {
    const mark = await this.readyMark();
    if (mark === null) return 0;
    let sealed = 0;
    for (;;) {
      const began = performance.now();
      const step = await this.db.transaction(async (tx) => {
        const locked = await tx.query<{ ok: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS ok', [SEAL_LOCK]);
        return locked.rows[0]!.ok ? sealNext(tx, mark) : null;
      });
      if (step === null) return sealed; // another instance is sealing
      sealed += step.sealed;
      if (step.done) break;
      if (this.restRatio > 0) await new Promise((r) => setTimeout(r, (performance.now() - began) * this.restRatio));
    }
    // The highest committed id, then the time: a transaction holding a lower id uncommitted began before it.
    await this.db.query(
      `INSERT INTO ledger_seal_mark (id, max_id, marked_at) SELECT 1, coalesce(max(id), 0), clock_timestamp() FROM ledger_entry
       ON CONFLICT (id) DO UPDATE SET max_id = EXCLUDED.max_id, marked_at = EXCLUDED.marked_at`,
    );
    return sealed;
  }

  /**
   * Everything committed before this call, sealed (tests, `spendgate ledger seal`): a round that
   * marks, then, once the transactions begun before that mark have ended (a few ms beside a live
   * gateway; it waits at most 2 s), a round that seals up to it.
   */
  async sealAll(): Promise<number> {
    const sealed = await this.round();
    for (let i = 0; i < 40; i++) {
      if ((await this.readyMark()) !== null) return sealed + (await this.round());
      await new Promise((r) => setTimeout(r, 50));
    }
    return sealed + (await this.round());
  }

  /** The last mark's id when sealing up to it is safe (0 when there is no mark yet), else null: wait. */
  private async readyMark(): Promise<bigint | null> {
    const { rows } = await this.db.query<{ max_id: string; busy: number }>(
      `SELECT m.max_id::text, (SELECT count(*)::int FROM pg_stat_activity a
                               WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND a.xact_start < m.marked_at) AS busy
       FROM ledger_seal_mark m WHERE m.id = 1`,
    );
    if (!rows[0]) return 0n;
    return rows[0].busy > 0 ? null : BigInt(rows[0].max_id);
  }
}

/** Seals the next interval (at most SEAL_SIZE entries) below `maxId`; `done` when none is left. */
async function sealNext(tx: pg.PoolClient, maxId: bigint): Promise<{ sealed: number; done: boolean }> {
  const { rows: last } = await tx.query<{ seq: string; last_id: string; hash: Buffer }>(
    'SELECT s.seq::text AS seq, s.last_id::text AS last_id, s.hash FROM ledger_seal s ORDER BY s.seq DESC LIMIT 1',
  );
  const seq = BigInt(last[0]?.seq ?? '0') + 1n;
  const after = BigInt(last[0]?.last_id ?? '0');
  const prev = last[0]?.hash ?? GENESIS;
  if (after >= maxId) return { sealed: 0, done: true };
  // The digests by the database, in one row: node only hashes their concatenation.
  const { rows } = await tx.query<{ ids: string[] | null; digests: Buffer | null; last_id: string | null; n: number }>(
    `SELECT array_agg(id::text ORDER BY id) AS ids, string_agg(d, ''::bytea ORDER BY id) AS digests, max(id)::text AS last_id, count(*)::int AS n
     FROM (SELECT e.id, ${ENTRY_DIGEST_SQL} AS d FROM ledger_entry e WHERE e.id > $1 AND e.id <= $2 ORDER BY e.id LIMIT $3) x`,
    [after.toString(), maxId.toString(), SEAL_SIZE],
  );
  const r = rows[0]!;
  // The interval ends at the last id read, or at the mark when fewer than a seal's worth remain.
  const lastId = r.n === SEAL_SIZE ? BigInt(r.last_id!) : maxId;
  const digests = r.digests ?? Buffer.alloc(0);
  await tx.query(
    `INSERT INTO ledger_seal (seq, first_id, last_id, entry_ids, digests, prev_hash, hash) VALUES ($1, $2, $3, $4::bigint[], $5, $6, $7)`,
    [seq.toString(), (after + 1n).toString(), lastId.toString(), r.ids ?? [], digests, prev, sealHash(prev, digests)],
  );
  return { sealed: r.n, done: lastId >= maxId };
}
