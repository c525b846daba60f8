/**
 * Cookies and CSRF (decisions §11), from @fastify/cookie and @fastify/csrf-protection: the session
 * cookie is HttpOnly, SameSite=Strict, Secure when PUBLIC_URL is https; every request a session
 * cookie authenticates to /graphql, POST /reports/* or /auth/logout must come from the console: an
 * Origin header, when sent, naming the gateway itself, and a valid x-csrf-token (from
 * GET /auth/session). A request with a bearer token carries no ambient credential and needs neither.
 */
import fastifyCookie from '@fastify/cookie';
import fastifyCsrf from '@fastify/csrf-protection';
import { Inject, Injectable } from '@nestjs/common';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../common/api-error.js';
import { CONFIG, type Config } from '../config/config.js';
import type { Grant, Role } from './permissions.js';
import { SESSION_COOKIE } from './sessions.service.js';

@Injectable()
export class SessionCookies {
  constructor(@Inject(CONFIG) private readonly config: Config) {}

  get secure(): boolean {
    return this.config.PUBLIC_URL?.startsWith('https:') ?? false;
  }

  get sessionMaxMs(): number {
    return this.config.SESSION_MAX_MS;
  }

  /** Who an OIDC sign-in lets in without an invitation, and with what grant. */
  get signIn(): { allowedDomains: string[]; defaultGrant: Grant } {
    const [role, scope] = this.config.OIDC_DEFAULT_ROLE.toUpperCase().split(':') as [Role, string | undefined];
    return {
      allowedDomains: this.config.OIDC_ALLOWED_DOMAINS,
      defaultGrant: { role, projectIds: scope === 'ALL' ? null : [] },
    };
  }

  set(
    reply: FastifyReply,
    name: string,
    value: string,
    options: { sameSite: 'strict' | 'lax'; maxAge: number; path: string },
  ): void {
    void reply.setCookie(name, value, { httpOnly: true, secure: this.secure, ...options });
  }

  clear(reply: FastifyReply, name: string, options: { path?: string } = {}): void {
    void reply.clearCookie(name, { httpOnly: true, secure: this.secure, path: options.path ?? '/' });
  }
}

/** Registers the cookie and CSRF plugins on the reads worker's Fastify, and the check above. */
export async function protectCookieRequests(fastify: FastifyInstance, config: Config): Promise<void> {
  const secure = config.PUBLIC_URL?.startsWith('https:') ?? false;
  await fastify.register(fastifyCookie);
  await fastify.register(fastifyCsrf, {
    sessionPlugin: '@fastify/cookie',
    cookieKey: 'sg_csrf',
    cookieOpts: { path: '/', sameSite: 'strict', httpOnly: true, secure },
    getToken: (request: FastifyRequest) => request.headers['x-csrf-token'] as string | undefined,
  });
  const origin = config.PUBLIC_URL ? new URL(config.PUBLIC_URL).origin : undefined;
  fastify.addHook('onRequest', (request, reply, done) => {
    if (!needsProof(request)) return done();
    const sent = request.headers.origin;
    // The main thread forwards reads here and passes on the host the browser asked for.
    const own = origin ?? `http://${String(request.headers['x-spendgate-host'] ?? request.headers.host)}`;
    if (sent !== undefined && sent !== own) {
      void reply
        .code(403)
        .send(
          ApiError.forbidden(`a request from ${String(sent).slice(0, 100)} may not use the console's session`).toBody(),
        );
      return;
    }
    fastify.csrfProtection(request, reply, done);
  });
}

function needsProof(request: FastifyRequest): boolean {
  if (request.headers.authorization) return false;
  const session = (request.cookies as Record<string, string | undefined> | undefined)?.[SESSION_COOKIE];
  if (!session) return false;
  const path = request.url.split('?')[0]!;
  // A GET of a report changes nothing and the SameSite=Strict cookie never rides a cross-site
  // request, so a plain download link works; GraphQL (a mutation may ride any request) always needs proof.
  if (path.startsWith('/reports/')) return request.method !== 'GET' && request.method !== 'HEAD';
  // The main thread's pre-check of a statement import (/__reads/…) asks with the client's own credentials.
  return (
    path === '/graphql' || (request.method === 'POST' && (path === '/auth/logout' || path.startsWith('/__reads/')))
  );
}
