/**
 * Failed authentication, slowed per client address (decisions §11): a bad key,
 * token, session or sign-in costs its address a point; past AUTH_FAILURES_PER_MINUTE in a minute
 * the address is answered 429 for AUTH_BLOCK_SECONDS (on the vendor paths too), and only its failed
 * attempts are counted: a good key from the same address is never slowed. Each failure that is
 * not refused this way is written to the audit trail (with the key's public prefix at most, never
 * a secret).
 *
 * Counted in PostgreSQL (rate-limiter-flexible's Postgres store, table auth_failure), so every
 * instance and thread (the vendor paths on the main thread, GraphQL and sign-in on the reads
 * thread) shares one count per address. Only failures touch the table; once an address is
 * blocked, this process remembers it in memory and answers 429 without asking the database
 * (inMemoryBlockOnConsumed), so a flood of bad keys costs no queries. Should the database not
 * answer, a per-process memory limiter stands in (insuranceLimiter).
 */
import { Inject, Injectable } from '@nestjs/common';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { ApiError } from '../common/api-error.js';
import { CONFIG, type Config } from '../config/config.js';
import { Database, DATABASE } from '../database/database.js';
import { AUDIT_SINK, type AuditSink } from './audit-sink.js';
import type { ClientInfo } from './sessions.service.js';

@Injectable()
export class AuthFailures {
  private readonly limiter: RateLimiterPostgres;

  constructor(
    @Inject(CONFIG) config: Config,
    @Inject(DATABASE) db: Database,
    @Inject(AUDIT_SINK) private readonly audit: AuditSink,
  ) {
    const limits = { points: config.AUTH_FAILURES_PER_MINUTE, duration: 60, blockDuration: config.AUTH_BLOCK_SECONDS };
    this.limiter = new RateLimiterPostgres({
      ...limits,
      storeClient: db.pool,
      storeType: 'pool',
      tableName: 'auth_failure',
      tableCreated: true, // the migration made it
      keyPrefix: 'addr',
      inMemoryBlockOnConsumed: config.AUTH_FAILURES_PER_MINUTE,
      inMemoryBlockDuration: config.AUTH_BLOCK_SECONDS,
      insuranceLimiter: new RateLimiterMemory(limits),
    });
  }

  /** Whether the address is refused for now (checked before a sign-in, which costs more than a look-up). */
  async blocked(address: string | null): Promise<boolean> {
    const state = await this.limiter.get(address ?? 'unknown');
    return state !== null && state.remainingPoints <= 0 && state.msBeforeNext > 0;
  }

  /**
   * Records a failed attempt and returns the refusal to answer: 401 (the given one), or 429 once
   * the address has failed too often. `what` names the attempt for the audit trail, never a secret.
   */
  async failed(
    client: ClientInfo,
    what: { action: string; presented: string | null },
    refusal: ApiError,
  ): Promise<ApiError> {
    try {
      await this.limiter.consume(client.clientAddress ?? 'unknown');
    } catch (e) {
      if (e instanceof RateLimiterRes) {
        return ApiError.tooMany(
          `too many failed sign-ins from this address: retry in ${Math.ceil(e.msBeforeNext / 1000)} s`,
        );
      }
      throw e;
    }
    await this.audit
      .record(
        { kind: 'named', actorKind: 'unknown', id: null, label: what.presented ?? 'no credentials' },
        { action: what.action },
        client,
      )
      .catch(() => {}); // a failed attempt is refused even when its record cannot be written
    return refusal;
  }
}

/** What a presented secret may be called in the audit trail: its kind and public prefix only. */
export function presented(token: string | undefined): string | null {
  if (!token) return null;
  const match = /^(sg|sgp|sgs)_([0-9a-f]{12})_/.exec(token);
  return match ? `${match[1]}_${match[2]}_…` : 'a token of no known kind';
}
