/** Who a bearer token is: the admin (ADMIN_TOKEN) or a project (its API key), or nobody. */
import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config.js';
import { ProjectsService } from '../projects/projects.service.js';
import { ApiError } from '../common/api-error.js';
import { sameSecret } from './api-keys.js';

export type Principal = { kind: 'admin' } | { kind: 'project'; projectId: string };

@Injectable()
export class PrincipalsService {
  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly projects: ProjectsService,
  ) {}

  async resolve(token: string | undefined): Promise<Principal | null> {
    if (!token) return null;
    if (this.config.ADMIN_TOKEN && sameSecret(token, this.config.ADMIN_TOKEN)) return { kind: 'admin' };
    const key = await this.projects.authenticate(token);
    return key ? { kind: 'project', projectId: key.projectId } : null;
  }
}

/**
 * The projects a caller may read, for a list filter: the admin reads what it asks for (all when
 * nothing is asked); a project key reads its own project, and asking for another is refused.
 */
export function scopeProjects(who: Principal, projectIds: string[] | undefined): string[] | undefined {
  if (who.kind === 'admin') return projectIds;
  if (projectIds?.some((id) => id !== who.projectId)) throw ApiError.forbidden('projectIds: this API key can only read its own project');
  return [who.projectId];
}
