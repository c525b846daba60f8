/**
 * Who is calling, for every edge that is not the vendor's paths (GraphQL, the CSV reports, the
 * console's pages): the request's bearer token or session cookie goes into a `CallContext` (GraphQL's
 * context is one), and `Callers.of(ctx)` resolves the caller once per request
 * (principals.service.ts and sessions.service.ts decide; access.ts says what each may do).
 * `clientInfo(request)` is what the audit trail records of the request.
 */
import { Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { bearer } from './api-keys.js';
import type { Principal } from './access.js';
import { PrincipalsService } from './principals.service.js';
import { SESSION_COOKIE, SessionsService, type ClientInfo } from './sessions.service.js';
import { ApiError } from '../common/api-error.js';
import { isWarmUp } from './warm-up-mark.js';

export interface CallContext {
  /** The bearer token as sent; resolved to a principal lazily, by the resolvers that need one. */
  token?: string;
  /** The console session cookie, when no bearer token was sent. */
  session?: string;
  client: ClientInfo;
  /** The reads worker's own warm-up request: an admin whose reads are not audited. */
  internal?: boolean;
  /** The resolved caller, once asked for. */
  principal?: Promise<Principal | null>;
}

export function callContext(request: FastifyRequest): CallContext {
  const token = bearer(request.headers.authorization);
  const session = token
    ? undefined
    : (request.cookies as Record<string, string | undefined> | undefined)?.[SESSION_COOKIE];
  return {
    ...(token ? { token } : {}),
    ...(session ? { session } : {}),
    client: clientInfo(request),
    internal: isWarmUp(request),
  };
}

/** What the audit trail keeps of a request: its id, the client's address, its user agent. */
export function clientInfo(request: FastifyRequest): ClientInfo {
  const ua = request.headers['user-agent'];
  return {
    requestId: request.id ?? null,
    clientAddress: clientAddress(request),
    userAgent: typeof ua === 'string' ? ua : null,
  };
}

/**
 * The client's address. The main thread forwards reads to this worker and says whom from in
 * x-spendgate-client (set by the main thread, after removing any the client sent).
 */
export function clientAddress(request: FastifyRequest): string {
  const forwarded = request.headers['x-spendgate-client'];
  return typeof forwarded === 'string' && forwarded ? forwarded : request.ip;
}

/** Resolves the GraphQL caller: a token or a session; refuses anyone else. */
@Injectable()
export class Callers {
  constructor(
    private readonly principals: PrincipalsService,
    private readonly sessions: SessionsService,
  ) {}

  async of(ctx: CallContext): Promise<Principal> {
    const who = await this.maybe(ctx);
    if (who) return who;
    if (!ctx.token && !ctx.session)
      throw ApiError.unauthorized('send Authorization: Bearer <a token or key>, or sign in to the console');
    throw ApiError.unauthorized(
      ctx.token ? 'the bearer token is not a valid token or key' : 'the session has ended: sign in again',
    );
  }

  /** The caller, or null when the request names nobody valid. */
  maybe(ctx: CallContext): Promise<Principal | null> {
    ctx.principal ??= ctx.token ? this.principals.resolve(ctx.token) : this.sessions.principal(ctx.session);
    return ctx.principal;
  }
}
