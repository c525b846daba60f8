/**
 * GraphQL's side of "who is calling": the bearer token goes into the context, and resolvers ask
 * `Principals.of(ctx)` for the caller (auth/principals.service.ts decides; auth/access.ts says
 * what each caller may do).
 */
import { Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { bearer } from '../auth/api-keys.js';
import { PrincipalsService, type Principal } from '../auth/principals.service.js';
import { ApiError } from '../common/api-error.js';

export interface GraphqlContext {
  /** The bearer token as sent; resolved to a principal lazily, by the resolvers that need one. */
  token?: string;
}

export function graphqlContext(request: FastifyRequest): GraphqlContext {
  return { token: bearer(request.headers.authorization) };
}

/** Resolves the GraphQL caller: the admin token, or a project API key; refuses anyone else. */
@Injectable()
export class Principals {
  constructor(private readonly principals: PrincipalsService) {}

  async of(ctx: GraphqlContext): Promise<Principal> {
    if (!ctx.token) throw ApiError.unauthorized('send Authorization: Bearer <ADMIN_TOKEN or project API key>');
    const who = await this.principals.resolve(ctx.token);
    if (!who) throw ApiError.unauthorized('the bearer token is neither the ADMIN_TOKEN nor a valid project API key');
    return who;
  }
}
