/** Projects and their API keys. */
import { Inject, Injectable } from '@nestjs/common';
import { ApiError } from '../common/api-error.js';
import { Database, DATABASE } from '../database/database.js';
import { generateKey, hashKey, parseKey, sameHash } from '../auth/api-keys.js';

export interface KeyContext {
  projectId: string;
  apiKeyId: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Authenticated keys are remembered briefly; a revoked key stops working within this time. */
const KEY_CACHE_MS = 5_000;

@Injectable()
export class ProjectsService {
  private readonly keyCache = new Map<string, { ctx: KeyContext | null; until: number }>();

  constructor(@Inject(DATABASE) private readonly db: Database) {}

  async create(name: string): Promise<{ id: string; name: string }> {
    const trimmed = name.trim();
    if (!trimmed || trimmed.length > 200) throw ApiError.badRequest('name: must be 1 to 200 characters');
    try {
      return await this.db.prisma.project.create({ data: { name: trimmed }, select: { id: true, name: true } });
    } catch (error) {
      if ((error as { code?: string }).code === 'P2002') throw ApiError.conflict(`name: a project named "${trimmed}" exists`);
      throw error;
    }
  }

  async list(projectId?: string): Promise<Array<{ id: string; name: string; unpricedPolicy: string; failurePolicy: string }>> {
    return this.db.prisma.project.findMany({
      where: projectId ? { id: projectId } : {},
      orderBy: { createdAt: 'asc' },
      select: { id: true, name: true, unpricedPolicy: true, failurePolicy: true },
    });
  }

  /** A project by id or by name. */
  async resolve(nameOrId: string): Promise<{ id: string; name: string }> {
    const project = await this.db.prisma.project.findFirst({
      where: UUID.test(nameOrId) ? { OR: [{ id: nameOrId }, { name: nameOrId }] } : { name: nameOrId },
      select: { id: true, name: true },
    });
    if (!project) throw ApiError.notFound(`project "${nameOrId}" not found`);
    return project;
  }

  async issueKey(projectId: string): Promise<string> {
    await this.resolve(projectId);
    const { key, prefix, hash } = generateKey();
    await this.db.prisma.apiKey.create({ data: { projectId, prefix, hash: new Uint8Array(hash) } });
    return key;
  }

  async revokeKey(prefix: string, projectId?: string): Promise<boolean> {
    const result = await this.db.prisma.apiKey.updateMany({
      where: { prefix, revokedAt: null, ...(projectId ? { projectId } : {}) },
      data: { revokedAt: new Date() },
    });
    this.keyCache.clear();
    return result.count > 0;
  }

  async setPolicies(projectId: string, policies: { unpricedPolicy?: 'block' | 'allow'; failurePolicy?: 'release' | 'charge' }): Promise<void> {
    await this.resolve(projectId);
    await this.db.prisma.project.update({ where: { id: projectId }, data: policies });
  }

  /** The project behind a key, or null. Never says which part was wrong. */
  async authenticate(key: string | undefined): Promise<KeyContext | null> {
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
    const { rows } = await this.db.query<{ id: string; project_id: string; hash: Buffer }>(
      'SELECT id, project_id, hash FROM api_key WHERE prefix = $1 AND revoked_at IS NULL',
      [parsed.prefix],
    );
    const row = rows[0];
    if (!row || !sameHash(row.hash, hashKey(key))) return null;
    return { projectId: row.project_id, apiKeyId: row.id };
  }
}
