/**
 * Who is calling (decisions §11): a bearer token is the ADMIN_TOKEN, a project's API key (`sg_`),
 * a person's access token (`sgp_`) or a service account's (`sgs_`); a console session is a cookie.
 * Secrets are compared as SHA-256 hashes in constant time, found by their public prefix.
 *
 * Project keys are remembered for a few seconds (the submission path authenticates thousands a
 * second; a revoked key stops within KEY_CACHE_MS on other instances, at once on this one).
 * People (invited or active), service accounts, their tokens and sessions are read on every request, so disabling a
 * person or revoking a token stops them on every instance at once.
 */
import { Inject, Injectable } from '@nestjs/common';
import { CacheEvents } from '../common/cache-events.js';
import { CONFIG, type Config } from '../config/config.js';
import { Database, DATABASE } from '../database/database.js';
import type { Principal } from './access.js';
import { hashKey, parseKey, parseToken, sameHash, sameSecret } from './api-keys.js';
import type { Role } from './permissions.js';

export type { Principal };

/** The project and key behind an authenticated API key. */
export interface KeyContext {
  projectId: string;
  apiKeyId: string;
  /** The key's public prefix (what reports and budgets name it by). */
  apiKeyPrefix: string;
  /** Default tags of every task the key submits ("name=value"). */
  tags: string[];
}

/** A revoked key stops working within this time on other instances (at once on this one). */
const KEY_CACHE_MS = 5_000;
/** "Last used" is written at most this often per key or token and instance. */
const LAST_USED_EVERY_MS = 60_000;

interface KeyRow {
  id: string;
  project_id: string;
  hash: Buffer;
  previous_hash: Buffer | null;
  previous_valid: boolean;
  expired: boolean;
  tags: string[] | null;
  /** Milliseconds until the key expires, or its previous secret's overlap ends: a cached answer ends then too. */
  expires_in_ms: number | null;
  previous_ends_in_ms: number | null;
}

interface HolderRow {
  token_id: string;
  hash: Buffer;
  kind: 'person' | 'service';
  holder_id: string;
  label: string;
  role: Role;
  all_projects: boolean;
  project_ids: string[];
}

@Injectable()
export class PrincipalsService {
  private readonly keyCache = new Map<string, { ctx: KeyContext | null; until: number }>();
  private readonly touched = new Map<string, number>();

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    @Inject(DATABASE) private readonly db: Database,
    events: CacheEvents,
  ) {
    events.on((e) => {
      if (e.kind === 'api-keys') this.keyCache.clear();
    });
  }

  /** The caller behind a bearer token, or null. Never says which part was wrong. */
  async resolve(token: string | undefined): Promise<Principal | null> {
    if (!token) return null;
    if (this.config.ADMIN_TOKEN && sameSecret(token, this.config.ADMIN_TOKEN)) return { kind: 'admin' };
    if (parseToken(token)) return this.holder(token);
    const key = await this.authenticateKey(token);
    return key ? { kind: 'project', projectId: key.projectId, keyPrefix: key.apiKeyPrefix } : null;
  }

  /** The project behind a key, or null. Never says which part was wrong. */
  async authenticateKey(key: string | undefined): Promise<KeyContext | null> {
    if (!key) return null;
    const now = Date.now();
    const cached = this.keyCache.get(key);
    if (cached && cached.until > now) return cached.ctx;
    const found = await this.lookupKey(key);
    if (this.keyCache.size > 10_000) this.keyCache.clear();
    this.keyCache.set(key, {
      ctx: found?.ctx ?? null,
      until: now + Math.min(KEY_CACHE_MS, found?.validForMs ?? KEY_CACHE_MS),
    });
    return found?.ctx ?? null;
  }

  /** A project key by its id (a console session signed in with one), when it still works. */
  async keyById(apiKeyId: string): Promise<Principal | null> {
    const { rows } = await this.db.query<{ project_id: string; prefix: string }>(
      `SELECT project_id, prefix FROM api_key WHERE id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`,
      [apiKeyId],
    );
    return rows[0] ? { kind: 'project', projectId: rows[0].project_id, keyPrefix: rows[0].prefix } : null;
  }

  /** A person by id, when active (a console session's). */
  async personById(personId: string): Promise<Principal | null> {
    const { rows } = await this.db.query<{
      id: string;
      email: string;
      role: Role;
      all_projects: boolean;
      project_ids: string[];
    }>(
      `SELECT id, email, role, all_projects, project_ids::text[] AS project_ids FROM person WHERE id = $1 AND state <> 'disabled'`,
      [personId],
    );
    const p = rows[0];
    return p
      ? { kind: 'person', id: p.id, email: p.email, role: p.role, all: p.all_projects, projectIds: p.project_ids }
      : null;
  }

  private async lookupKey(key: string): Promise<{ ctx: KeyContext; validForMs: number } | null> {
    const parsed = parseKey(key);
    if (!parsed) return null;
    const { rows } = await this.db.query<KeyRow>(
      `SELECT id, project_id, hash, previous_hash, coalesce(previous_valid_until > now(), false) AS previous_valid,
              coalesce(expires_at <= now(), false) AS expired, tags,
              (extract(epoch FROM expires_at - now()) * 1000)::float8 AS expires_in_ms,
              (extract(epoch FROM previous_valid_until - now()) * 1000)::float8 AS previous_ends_in_ms
       FROM api_key WHERE prefix = $1 AND revoked_at IS NULL`,
      [parsed.prefix],
    );
    const row = rows[0];
    if (!row || row.expired) return null;
    const hash = hashKey(key);
    // After a rotation the previous secret keeps working for its overlap.
    const current = sameHash(row.hash, hash);
    const previous = !current && row.previous_valid && row.previous_hash !== null && sameHash(row.previous_hash, hash);
    if (!current && !previous) return null;
    this.touch('api_key', row.id);
    const ends = [row.expires_in_ms, previous ? row.previous_ends_in_ms : null].filter(
      (ms): ms is number => ms !== null,
    );
    return {
      ctx: { projectId: row.project_id, apiKeyId: row.id, apiKeyPrefix: parsed.prefix, tags: row.tags ?? [] },
      validForMs: Math.min(KEY_CACHE_MS, ...ends),
    };
  }

  /** A person's or service account's token: its holder, if the token and the holder are live. */
  private async holder(token: string): Promise<Principal | null> {
    const { prefix } = parseToken(token)!;
    // Prepared: every read of a person or a service account (a dashboard polling each second) asks it.
    const { rows } = await this.db.prepared<HolderRow>(
      'access_token_holder',
      `SELECT t.id AS token_id, t.hash,
              CASE WHEN t.person_id IS NOT NULL THEN 'person' ELSE 'service' END AS kind,
              coalesce(p.id, s.id) AS holder_id, coalesce(p.email, s.name) AS label,
              coalesce(p.role, s.role) AS role, coalesce(p.all_projects, s.all_projects) AS all_projects,
              coalesce(p.project_ids, s.project_ids)::text[] AS project_ids
       FROM access_token t
       LEFT JOIN person p ON p.id = t.person_id AND p.state <> 'disabled'
       LEFT JOIN service_account s ON s.id = t.service_account_id AND s.disabled_at IS NULL
       WHERE t.prefix = $1 AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())
         AND (p.id IS NOT NULL OR s.id IS NOT NULL)`,
      [prefix],
    );
    const row = rows[0];
    if (!row || !sameHash(row.hash, hashKey(token))) return null;
    this.touch('access_token', row.token_id);
    return row.kind === 'person'
      ? {
          kind: 'person',
          id: row.holder_id,
          email: row.label,
          role: row.role,
          all: row.all_projects,
          projectIds: row.project_ids,
        }
      : {
          kind: 'service',
          id: row.holder_id,
          name: row.label,
          role: row.role,
          all: row.all_projects,
          projectIds: row.project_ids,
        };
  }

  /** Writes "last used", at most once a minute per key or token: never on every request. */
  private touch(table: 'api_key' | 'access_token', id: string): void {
    const now = Date.now();
    const key = `${table}:${id}`;
    if ((this.touched.get(key) ?? 0) > now - LAST_USED_EVERY_MS) return;
    if (this.touched.size > 10_000) this.touched.clear();
    this.touched.set(key, now);
    this.db.query(`UPDATE ${table} SET last_used_at = now() WHERE id = $1`, [id]).catch(() => this.touched.delete(key));
  }
}
