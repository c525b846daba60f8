/** Resolves the GraphQL caller: the admin token, or a project API key; refuses anyone else. */
import { Injectable } from '@nestjs/common';
import { PrincipalsService, type Principal } from '../auth/principals.service.js';
import { clip, isUuid } from '../common/ids.js';
import { refused, type GraphqlContext } from './graphql-auth.js';


@Injectable()
export class Principals {
  constructor(private readonly principals: PrincipalsService) {}

  async of(ctx: GraphqlContext): Promise<Principal> {
    if (!ctx.token) throw refused('send Authorization: Bearer <ADMIN_TOKEN or project API key>', 'UNAUTHENTICATED');
    const who = await this.principals.resolve(ctx.token);
    if (!who) throw refused('the bearer token is neither the ADMIN_TOKEN nor a valid project API key', 'UNAUTHENTICATED');
    return who;
  }
}

/** Ids are UUIDs; anything else is refused naming the argument, before it reaches a query. */
export function assertUuid(field: string, value: string): void {
  if (!isUuid(value)) throw refused(`${field}: "${clip(value)}" is not an id (a UUID)`, 'BAD_USER_INPUT');
}

export function assertProjectId(projectId: string): void {
  assertUuid('projectId', projectId);
}
