/**
 * Console sessions (decisions §11): server-side rows, an HttpOnly cookie holding 32 random bytes,
 * the row keyed by their SHA-256 (a database read never yields a usable cookie). A session ends
 * at sign-out, after SESSION_IDLE_MS without a request, or SESSION_MAX_MS after sign-in, and at
 * once when its person is disabled (the person is read with the session on every request).
 */
import { createHash, randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config.js';
import { Database, DATABASE } from '../database/database.js';
import type { Principal } from './access.js';
import { PrincipalsService } from './principals.service.js';

export const SESSION_COOKIE = 'sg_session';
/** last_seen_at is written at most this often per session. */
const SEEN_EVERY_MS = 60_000;

export type SessionKind = 'person' | 'admin' | 'project_key';

export interface ClientInfo {
  requestId: string | null;
  clientAddress: string | null;
  userAgent: string | null;
}

const idOf = (raw: string) => createHash('sha256').update(raw).digest();

@Injectable()
export class SessionsService {
  constructor(
    @Inject(CONFIG) private readonly config: Config,
    @Inject(DATABASE) private readonly db: Database,
    private readonly principals: PrincipalsService,
  ) {}

  /** A new session; returns the cookie's value (shown to nobody else, stored nowhere). */
  async create(
    kind: SessionKind,
    holder: { personId?: string; apiKeyId?: string },
    client: ClientInfo,
  ): Promise<string> {
    const raw = randomBytes(32).toString('base64url');
    await this.db.query(
      `INSERT INTO session (id, kind, person_id, api_key_id, expires_at, user_agent, client_address)
       VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5::double precision / 1000), $6, $7)`,
      [
        idOf(raw),
        kind,
        holder.personId ?? null,
        holder.apiKeyId ?? null,
        this.config.SESSION_MAX_MS,
        client.userAgent?.slice(0, 300) ?? null,
        client.clientAddress,
      ],
    );
    return raw;
  }

  /** The caller behind a session cookie, or null when it is unknown, ended, idle too long or its holder is gone. */
  async principal(raw: string | undefined): Promise<Principal | null> {
    if (!raw || raw.length > 100) return null;
    const { rows } = await this.db.query<{
      kind: SessionKind;
      person_id: string | null;
      api_key_id: string | null;
      stale: boolean;
    }>(
      `SELECT kind, person_id, api_key_id, last_seen_at < now() - make_interval(secs => $2::double precision / 1000) AS stale
       FROM session
       WHERE id = $1 AND ended_at IS NULL AND expires_at > now()
         AND last_seen_at > now() - make_interval(secs => $3::double precision / 1000)`,
      [idOf(raw), SEEN_EVERY_MS, this.config.SESSION_IDLE_MS],
    );
    const row = rows[0];
    if (!row) return null;
    if (row.stale)
      void this.db.query('UPDATE session SET last_seen_at = now() WHERE id = $1', [idOf(raw)]).catch(() => {});
    const sessionId = idOf(raw).toString('hex').slice(0, 12);
    if (row.kind === 'admin') return { kind: 'admin' };
    if (row.kind === 'project_key') return this.principals.keyById(row.api_key_id!);
    const person = await this.principals.personById(row.person_id!);
    return person && person.kind === 'person' ? { ...person, sessionId } : null;
  }

  /** Ends the session on the server: the cookie is worth nothing after. */
  async end(raw: string | undefined): Promise<boolean> {
    if (!raw) return false;
    const { rowCount } = await this.db.query('UPDATE session SET ended_at = now() WHERE id = $1 AND ended_at IS NULL', [
      idOf(raw),
    ]);
    return (rowCount ?? 0) > 0;
  }

  /** Ends every session of a person (disabled, or their role changed). */
  async endFor(personId: string): Promise<void> {
    await this.db.query('UPDATE session SET ended_at = now() WHERE person_id = $1 AND ended_at IS NULL', [personId]);
  }

  /** The session's public label in the audit trail: never the cookie. */
  static label(raw: string): string {
    return idOf(raw).toString('hex').slice(0, 12);
  }
}
