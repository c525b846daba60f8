/**
 * Who is calling: a bearer token is the admin (ADMIN_TOKEN), a project's API key, or nobody.
 * API keys are looked up by their public prefix and their hashes compared in constant time
 * (api-keys.ts); an authenticated key is remembered for a few seconds, and forgotten at once when
 * a key is revoked in this process or its reads worker (CacheEvents).
 */
import { Inject, Injectable } from '@nestjs/common';
import { CacheEvents } from '../common/cache-events.js';
import { CONFIG, type Config } from '../config/config.js';
import { Database, DATABASE } from '../database/database.js';
import type { Principal } from './access.js';
import { hashKey, parseKey, sameHash, sameSecret } from './api-keys.js';

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

@Injectable()
export class PrincipalsService {
  private readonly keyCache = new Map<string, { ctx: KeyContext | null; until: number }>();

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    @Inject(DATABASE) private readonly db: Database,
    events: CacheEvents,
  ) {
    events.on((e) => {
      if (e.kind === 'api-keys') this.keyCache.clear();
    });
  }

  async resolve(token: string | undefined): Promise<Principal | null> {
    if (!token) return null;
    if (this.config.ADMIN_TOKEN && sameSecret(token, this.config.ADMIN_TOKEN)) return { kind: 'admin' };
    const key = await this.authenticateKey(token);
    return key ? { kind: 'project', projectId: key.projectId } : null;
  }

  /** The project behind a key, or null. Never says which part was wrong. */
  async authenticateKey(key: string | undefined): Promise<KeyContext | null> {
    if (!key) return null;
    const now = Date.now();
    const cached = this.keyCache.get(key);
    if (cached && cached.until > now) return cached.ctx;
    const ctx = await this.lookup(key);
    if (this.keyCache.size > 10_000) this.keyCache.clear();
    this.keyCache.set(key, { ctx, until: now + KEY_CACHE_MS });
    return ctx;
  }

  private async lookup(key: string): Promise<KeyContext | null> {
    const parsed = parseKey(key);
    if (!parsed) return null;
    const { rows } = await this.db.query<{ id: string; project_id: string; hash: Buffer; tags: string[] | null }>(
      'SELECT id, project_id, hash, tags FROM api_key WHERE prefix = $1 AND revoked_at IS NULL',
      [parsed.prefix],
    );
    const row = rows[0];
    if (!row || !sameHash(row.hash, hashKey(key))) return null;
    return { projectId: row.project_id, apiKeyId: row.id, apiKeyPrefix: parsed.prefix, tags: row.tags ?? [] };
  }
}
