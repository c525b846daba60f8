/** Resolves the GraphQL caller: the admin token, or a project API key; refuses anyone else. */
import { Injectable } from '@nestjs/common';
import { PrincipalsService, type Principal } from '../auth/principals.service.js';
import { refused, type GraphqlContext } from './graphql-auth.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

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
  if (!UUID.test(value)) throw refused(`${field}: "${value.slice(0, 40)}" is not an id (a UUID)`, 'BAD_USER_INPUT');
}

export function assertProjectId(projectId: string): void {
  assertUuid('projectId', projectId);
}
