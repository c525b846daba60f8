/**
 * GraphQL access: ADMIN_TOKEN reads and writes everything; a project API key reads its own
 * project only. Anything else is refused, and the refusal says why.
 */
import type { FastifyRequest } from 'fastify';
import type { GraphQLError } from 'graphql';
import { bearer } from '../auth/api-keys.js';
import { graphqlRefusal, type GraphqlCode } from '../common/error.filter.js';

export interface GraphqlContext {
  /** The bearer token as sent; resolved to a principal lazily by `principal()`. */
  token?: string;
}

import type { Principal } from '../auth/principals.service.js';
export type { Principal };

export function graphqlContext(request: FastifyRequest): GraphqlContext {
  return { token: bearer(request.headers.authorization) };
}

export function refused(message: string, code: GraphqlCode = 'FORBIDDEN'): GraphQLError {
  return graphqlRefusal(message, code);
}

/** Throws unless the principal may read `projectId`. A project key never learns whether another project exists. */
export function assertCanRead(principal: Principal, projectId: string): void {
  if (principal.kind === 'admin' || principal.projectId === projectId) return;
  throw refused(`this API key can only read its own project; project ${projectId} is not visible to it`);
}

export function assertAdmin(principal: Principal, action: string): void {
  if (principal.kind !== 'admin') throw refused(`${action} needs the ADMIN_TOKEN; a project API key can only read its own project`);
}
