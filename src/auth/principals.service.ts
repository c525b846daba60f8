/** Who a bearer token is: the admin (ADMIN_TOKEN) or a project (its API key), or nobody. */
import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config.js';
import { ProjectsService } from '../projects/projects.service.js';
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
