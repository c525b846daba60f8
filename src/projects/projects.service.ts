/**
 * Projects and their API keys: created, listed, issued, rotated, revoked (who is calling is
 * auth/principals.service.ts). SQL on the Database, like every other table: an audited change and
 * its record commit in one transaction (audit/changes.service.ts), which Prisma's client, with its
 * own connections, cannot join (docs/architecture.md, "Data access").
 */
import { randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { ApiError } from '../common/api-error.js';
import { Database, DATABASE } from '../database/database.js';
import { canonicalTags, parseTags } from '../attribution/attribution.js';
import { generateKey, hashKey } from '../auth/api-keys.js';
import { CacheEvents } from '../common/cache-events.js';
import { isUuid } from '../common/ids.js';
import { cleanText } from '../common/text.js';
import { dec, type Decimal } from '../pricing/money.js';

export interface ApiKeyRow {
  id: string;
  projectId: string;
  prefix: string;
  name: string | null;
  tags: string[];
  createdBy: string | null;
  createdAt: Date;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

/** How long the previous secret of a rotated key keeps working unless told: a day. */
export const DEFAULT_ROTATION_OVERLAP_SECONDS = 86_400;
const MAX_OVERLAP_SECONDS = 30 * 86_400;

@Injectable()
export class ProjectsService {
  constructor(
    @Inject(DATABASE) private readonly db: Database,
    private readonly events: CacheEvents = new CacheEvents(),
  ) {}

  async create(name: string): Promise<{ id: string; name: string }> {
    const trimmed = cleanText('name', name, 200);
    const { rows } = await this.db.query<{ id: string; name: string }>(
      'INSERT INTO project (id, name) VALUES (gen_random_uuid(), $1) ON CONFLICT (name) DO NOTHING RETURNING id::text, name',
      [trimmed],
    );
    if (!rows[0]) throw ApiError.conflict(`name: a project named "${trimmed}" exists`);
    return rows[0];
  }

  /** Projects, all or those named (a caller's grant), oldest first. */
  async list(
    projectIds?: string[],
  ): Promise<
    Array<{ id: string; name: string; unpricedPolicy: string; failurePolicy: string; chatHoldMultiplier: Decimal }>
  > {
    const { rows } = await this.db.query<{
      id: string;
      name: string;
      unpricedPolicy: string;
      failurePolicy: string;
      multiplier: string;
    }>(
      `SELECT id::text, name, unpriced_policy::text AS "unpricedPolicy", failure_policy::text AS "failurePolicy", chat_hold_multiplier::text AS multiplier
       FROM project WHERE $1::uuid[] IS NULL OR id = ANY($1) ORDER BY created_at, id`,
      [projectIds ?? null],
    );
    return rows.map(({ multiplier, ...r }) => ({ ...r, chatHoldMultiplier: dec(multiplier) }));
  }

  /** A project by id or by name. */
  async resolve(nameOrId: string): Promise<{ id: string; name: string }> {
    const { rows } = await this.db.query<{ id: string; name: string }>(
      'SELECT id::text, name FROM project WHERE name = $1 OR ($2::uuid IS NOT NULL AND id = $2) ORDER BY name = $1 DESC LIMIT 1',
      [nameOrId, isUuid(nameOrId) ? nameOrId : null],
    );
    if (!rows[0]) throw ApiError.notFound(`project "${nameOrId}" not found`);
    return rows[0];
  }

  /**
   * A new key; `tags` ("name=value") are the default tags of every task it submits; `name` what
   * people call it; `expiresAt` when it stops working. The secret is returned once.
   */
  async issueKey(
    projectId: string,
    tags: readonly string[] = [],
    options: { name?: string; expiresAt?: Date; createdBy?: string } = {},
  ): Promise<string> {
    const defaults = canonicalTags(parseTags(tags, 'tags'));
    const name = options.name === undefined ? null : cleanText('name', options.name, 100);
    if (options.expiresAt && options.expiresAt.getTime() <= Date.now())
      throw ApiError.badRequest('expiresAt: must be in the future');
    const { rowCount } = await this.db.query('SELECT 1 FROM project WHERE id = $1', [projectId]);
    if (!rowCount) throw ApiError.notFound(`project "${projectId}" not found`);
    const { key, prefix, hash } = generateKey();
    await this.db.query(
      `INSERT INTO api_key (id, project_id, prefix, hash, tags, name, created_by, expires_at) VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, $6, $7)`,
      [projectId, prefix, hash, defaults, name, options.createdBy ?? null, options.expiresAt ?? null],
    );
    return key;
  }

  /** The project's keys (never their secrets), newest first. */
  async keys(projectId: string): Promise<ApiKeyRow[]> {
    return (await this.keysByProject([projectId])).get(projectId)!;
  }

  /** The keys of these projects, each project's newest first: one query for a whole list (the console's every load). */
  async keysByProject(projectIds: string[]): Promise<Map<string, ApiKeyRow[]>> {
    const { rows } = await this.db.query<ApiKeyRow>(
      `${KEY_COLUMNS} WHERE project_id = ANY($1::uuid[]) ORDER BY created_at DESC, id`,
      [projectIds],
    );
    const byProject = new Map(projectIds.map((id) => [id, [] as ApiKeyRow[]]));
    for (const row of rows) byProject.get(row.projectId)?.push(row);
    return byProject;
  }

  /** A key by its public prefix, or undefined. */
  async keyByPrefix(prefix: string): Promise<ApiKeyRow | undefined> {
    const { rows } = await this.db.query<ApiKeyRow>(`${KEY_COLUMNS} WHERE prefix = $1`, [prefix]);
    return rows[0];
  }

  async revokeKey(prefix: string, projectId?: string): Promise<boolean> {
    const { rowCount } = await this.db.query(
      'UPDATE api_key SET revoked_at = now() WHERE prefix = $1 AND revoked_at IS NULL AND ($2::uuid IS NULL OR project_id = $2)',
      [prefix, projectId ?? null],
    );
    await this.db.afterCommit(() => this.events.emit({ kind: 'api-keys' }));
    return (rowCount ?? 0) > 0;
  }

  /**
   * A new secret for the same key (same prefix, budgets and attribution): the new one works at
   * once, the previous one for `overlapSeconds` more (a deploy's time to switch). Returns the new key.
   */
  async rotateKey(prefix: string, overlapSeconds = DEFAULT_ROTATION_OVERLAP_SECONDS): Promise<string> {
    if (!Number.isInteger(overlapSeconds) || overlapSeconds < 0 || overlapSeconds > MAX_OVERLAP_SECONDS) {
      throw ApiError.badRequest(`overlapSeconds: must be a whole number from 0 to ${MAX_OVERLAP_SECONDS}`);
    }
    const key = `sg_${prefix}_${randomBytes(24).toString('base64url')}`;
    const { rowCount } = await this.db.query(
      `UPDATE api_key SET previous_hash = hash, previous_valid_until = now() + make_interval(secs => $3), hash = $2
       WHERE prefix = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`,
      [prefix, hashKey(key), overlapSeconds],
    );
    if (!rowCount) throw ApiError.notFound(`API key ${prefix} not found, revoked or expired`);
    await this.db.afterCommit(() => this.events.emit({ kind: 'api-keys' }));
    return key;
  }

  async setPolicies(
    projectId: string,
    policies: {
      unpricedPolicy?: 'block' | 'allow';
      failurePolicy?: 'release' | 'charge';
      chatHoldMultiplier?: Decimal;
    },
  ): Promise<void> {
    const { chatHoldMultiplier, unpricedPolicy, failurePolicy } = policies;
    if (chatHoldMultiplier && (chatHoldMultiplier.lessThan(1) || chatHoldMultiplier.greaterThan(1000))) {
      throw ApiError.badRequest('chatHoldMultiplier: must be between 1 and 1000 (1 holds exactly the estimate)');
    }
    const { rowCount } = await this.db.query(
      `UPDATE project SET unpriced_policy = coalesce($2::"UnpricedPolicy", unpriced_policy), failure_policy = coalesce($3::"FailurePolicy", failure_policy),
              chat_hold_multiplier = coalesce($4::numeric, chat_hold_multiplier)
       WHERE id = $1`,
      [projectId, unpricedPolicy ?? null, failurePolicy ?? null, chatHoldMultiplier?.toFixed() ?? null],
    );
    if (!rowCount) throw ApiError.notFound(`project "${projectId}" not found`);
    await this.db.afterCommit(() => this.events.emit({ kind: 'project-policies', projectId }));
  }
}

const KEY_COLUMNS = `SELECT id::text, project_id::text AS "projectId", prefix, name, tags, created_by AS "createdBy", created_at AS "createdAt",
  expires_at AS "expiresAt", last_used_at AS "lastUsedAt", revoked_at AS "revokedAt" FROM api_key`;
