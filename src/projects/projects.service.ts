/** Projects and their API keys: created, listed, issued, revoked (who is calling is auth/principals.service.ts). */
import { Inject, Injectable } from '@nestjs/common';
import { ApiError } from '../common/api-error.js';
import { Database, DATABASE } from '../database/database.js';
import { canonicalTags, parseTags } from '../attribution/attribution.js';
import { generateKey } from '../auth/api-keys.js';
import { CacheEvents } from '../common/cache-events.js';
import { isUuid } from '../common/ids.js';
import { cleanText } from '../common/text.js';
import { dec, type Decimal } from '../pricing/money.js';


@Injectable()
export class ProjectsService {
  constructor(
    @Inject(DATABASE) private readonly db: Database,
    private readonly events: CacheEvents = new CacheEvents(),
  ) {}

  async create(name: string): Promise<{ id: string; name: string }> {
    const trimmed = cleanText('name', name, 200);
    try {
      return await this.db.prisma.project.create({ data: { name: trimmed }, select: { id: true, name: true } });
    } catch (error) {
      if ((error as { code?: string }).code === 'P2002') throw ApiError.conflict(`name: a project named "${trimmed}" exists`);
      throw error;
    }
  }

  async list(projectId?: string): Promise<Array<{ id: string; name: string; unpricedPolicy: string; failurePolicy: string; chatHoldMultiplier: Decimal }>> {
    const rows = await this.db.prisma.project.findMany({
      where: projectId ? { id: projectId } : {},
      orderBy: { createdAt: 'asc' },
      select: { id: true, name: true, unpricedPolicy: true, failurePolicy: true, chatHoldMultiplier: true },
    });
    return rows.map((r) => ({ ...r, chatHoldMultiplier: dec(r.chatHoldMultiplier) }));
  }

  /** A project by id or by name. */
  async resolve(nameOrId: string): Promise<{ id: string; name: string }> {
    const project = await this.db.prisma.project.findFirst({
      where: isUuid(nameOrId) ? { OR: [{ id: nameOrId }, { name: nameOrId }] } : { name: nameOrId },
      select: { id: true, name: true },
    });
    if (!project) throw ApiError.notFound(`project "${nameOrId}" not found`);
    return project;
  }

  /** A new key; `tags` ("name=value") are the default tags of every task it submits. */
  async issueKey(projectId: string, tags: readonly string[] = []): Promise<string> {
    const defaults = canonicalTags(parseTags(tags, 'tags'));
    await this.resolve(projectId);
    const { key, prefix, hash } = generateKey();
    await this.db.prisma.apiKey.create({ data: { projectId, prefix, hash: new Uint8Array(hash), tags: defaults } });
    return key;
  }

  /** The project's keys (never their secrets), newest first. */
  async keys(projectId: string): Promise<Array<{ prefix: string; tags: string[]; createdAt: Date; revokedAt: Date | null }>> {
    return this.db.prisma.apiKey.findMany({
      where: { projectId },
      orderBy: { createdAt: 'desc' },
      select: { prefix: true, tags: true, createdAt: true, revokedAt: true },
    });
  }

  async revokeKey(prefix: string, projectId?: string): Promise<boolean> {
    const result = await this.db.prisma.apiKey.updateMany({
      where: { prefix, revokedAt: null, ...(projectId ? { projectId } : {}) },
      data: { revokedAt: new Date() },
    });
    await this.events.emit({ kind: 'api-keys' });
    return result.count > 0;
  }

  async setPolicies(
    projectId: string,
    policies: { unpricedPolicy?: 'block' | 'allow'; failurePolicy?: 'release' | 'charge'; chatHoldMultiplier?: Decimal },
  ): Promise<void> {
    const { chatHoldMultiplier, ...rest } = policies;
    if (chatHoldMultiplier && (chatHoldMultiplier.lessThan(1) || chatHoldMultiplier.greaterThan(1000))) {
      throw ApiError.badRequest('chatHoldMultiplier: must be between 1 and 1000 (1 holds exactly the estimate)');
    }
    await this.resolve(projectId);
    await this.db.prisma.project.update({
      where: { id: projectId },
      data: { ...rest, ...(chatHoldMultiplier ? { chatHoldMultiplier: chatHoldMultiplier.toFixed() } : {}) },
    });
    await this.events.emit({ kind: 'project-policies', projectId });
  }
}
