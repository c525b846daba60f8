/** Resolves the GraphQL caller: the admin token, or a project API key. */
import { Inject, Injectable } from '@nestjs/common';
import { sameSecret } from '../auth/api-keys.js';
import { CONFIG, type Config } from '../config/config.js';
import { ProjectsService } from '../projects/projects.service.js';
import { refused, type GraphqlContext, type Principal } from './graphql-auth.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

@Injectable()
export class Principals {
  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly projects: ProjectsService,
  ) {}

  async of(ctx: GraphqlContext): Promise<Principal> {
    const token = ctx.token;
    if (!token) throw refused('send Authorization: Bearer <ADMIN_TOKEN or project API key>', 'UNAUTHENTICATED');
    if (this.config.ADMIN_TOKEN && sameSecret(token, this.config.ADMIN_TOKEN)) return { kind: 'admin' };
    const key = await this.projects.authenticate(token);
    if (!key) throw refused('the bearer token is neither the ADMIN_TOKEN nor a valid project API key', 'UNAUTHENTICATED');
    return { kind: 'project', projectId: key.projectId };
  }
}

export function assertProjectId(projectId: string): void {
  if (!UUID.test(projectId)) throw refused(`projectId: "${projectId.slice(0, 40)}" is not a project id (a UUID)`, 'BAD_USER_INPUT');
}
