/**
 * GraphQL access: ADMIN_TOKEN reads and writes everything; a project API key reads its own
 * project only. Anything else is refused, and the refusal says why.
 */
import type { FastifyRequest } from 'fastify';
import { GraphQLError } from 'graphql';
import { bearer } from '../auth/api-keys.js';

export interface GraphqlContext {
  /** The bearer token as sent; resolved to a principal lazily by `principal()`. */
  token?: string;
}

import type { Principal } from '../auth/principals.service.js';
export type { Principal };

export function graphqlContext(request: FastifyRequest): GraphqlContext {
  return { token: bearer(request.headers.authorization) };
}

/** The HTTP status each refusal would have over REST: GraphQL errors carry it as the ApiError ones do. */
const STATUS = { UNAUTHENTICATED: 401, FORBIDDEN: 403, BAD_USER_INPUT: 400, NOT_FOUND: 404 } as const;

export function refused(message: string, code: keyof typeof STATUS = 'FORBIDDEN'): GraphQLError {
  return new GraphQLError(message, { extensions: { code, status: STATUS[code] } });
}

/** Throws unless the principal may read `projectId`. A project key never learns whether another project exists. */
export function assertCanRead(principal: Principal, projectId: string): void {
  if (principal.kind === 'admin' || principal.projectId === projectId) return;
  throw refused(`this API key can only read its own project; project ${projectId} is not visible to it`);
}

export function assertAdmin(principal: Principal, action: string): void {
  if (principal.kind !== 'admin') throw refused(`${action} needs the ADMIN_TOKEN; a project API key can only read its own project`);
}
