/**
 * Signing in and out of the console (decisions §11; interfaces.md):
 * - GET /auth/login starts the OpenID Connect flow; GET /auth/callback finishes it and sets the
 *   session cookie (or shows a readable page saying why not);
 * - POST /auth/token signs in with a token (a person's access token, the break-glass ADMIN_TOKEN,
 *   or a project key for its own project) and answers with the session cookie;
 * - GET /auth/session says who is signed in (the viewer, as GraphQL's `viewer` answers: the console
 *   needs no second round trip before it asks for its figures), whether OIDC is offered, and the CSRF
 *   token every state-changing request a cookie authenticates must carry (x-csrf-token);
 * - POST /auth/logout ends the session on the server.
 * Every sign-in, failed one and sign-out is audited; failures are slowed per address.
 */
import { Body, Controller, Get, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ChangesService } from '../audit/changes.service.js';
import { ApiError } from '../common/api-error.js';
import { clientInfo } from '../auth/callers.js';
import { PeopleService } from './people.service.js';
import type { Principal } from '../auth/access.js';
import { AuthFailures, presented } from '../auth/auth-failures.js';
import { SessionCookies } from '../auth/session-cookies.js';
import { OidcService, SignInRefused } from '../auth/oidc.service.js';
import { PrincipalsService } from '../auth/principals.service.js';
import { SESSION_COOKIE, SessionsService, type SessionKind } from '../auth/sessions.service.js';
import { ProjectsService } from '../projects/projects.service.js';
import { viewerOf } from './viewer.resolver.js';

const STATE_COOKIE = 'sg_oidc_state';

@Controller('auth')
export class SignInController {
  constructor(
    private readonly oidc: OidcService,
    private readonly sessions: SessionsService,
    private readonly principals: PrincipalsService,
    private readonly people: PeopleService,
    private readonly failures: AuthFailures,
    private readonly changes: ChangesService,
    private readonly cookies: SessionCookies,
    private readonly projects: ProjectsService,
  ) {}

  @Get('session')
  async session(@Req() request: FastifyRequest, @Res() reply: FastifyReply) {
    const who = await this.sessions.principal(cookie(request, SESSION_COOKIE));
    void reply.header('cache-control', 'no-store').send({
      signedIn: who !== null,
      oidc: this.oidc.enabled,
      csrfToken: await reply.generateCsrf(),
      ...(who ? { viewer: await viewerOf(who, this.projects) } : {}),
    });
  }

  @Get('login')
  async login(@Req() request: FastifyRequest, @Res() reply: FastifyReply) {
    if (!this.oidc.enabled)
      throw ApiError.notFound(
        'sign-in with an identity provider is not configured here (OIDC_ISSUER): sign in with a token',
      );
    if (await this.failures.blocked(clientInfo(request).clientAddress))
      throw ApiError.tooMany('too many failed sign-ins from this address: retry later');
    try {
      const { url, state } = await this.oidc.start();
      this.cookies.set(reply, STATE_COOKIE, state, { sameSite: 'lax', maxAge: 600, path: '/auth' });
      return reply.redirect(url, 302);
    } catch (error) {
      if (error instanceof SignInRefused) return this.page(reply, 503, error.message);
      throw error;
    }
  }

  @Get('callback')
  async callback(@Req() request: FastifyRequest, @Res() reply: FastifyReply) {
    const client = clientInfo(request);
    this.cookies.clear(reply, STATE_COOKIE, { path: '/auth' });
    if (await this.failures.blocked(client.clientAddress))
      return this.page(reply, 429, 'too many failed sign-ins from this address: retry later');
    const refuse = async (reason: string, who: string | null) => {
      const answer = await this.failures.failed(
        client,
        { action: 'sign-in.failed', presented: who },
        ApiError.forbidden(reason),
      );
      return this.page(reply, answer.status, answer.status === 429 ? answer.message : reason);
    };
    let identity;
    try {
      identity = await this.oidc.finish(new URL(request.url, 'http://gateway'), cookie(request, STATE_COOKIE));
    } catch (error) {
      if (error instanceof SignInRefused) return refuse(error.message, null);
      throw error;
    }
    const admitted = await this.people.admit(identity, this.config.allowedDomains, this.config.defaultGrant);
    if ('refused' in admitted)
      return refuse(admitted.refused, identity.email ?? `${identity.issuer} ${identity.subject}`);
    const person = (await this.principals.personById(admitted.person.id))!;
    await this.startSession(reply, person, 'person', { personId: admitted.person.id }, client, 'sign-in.oidc');
    return reply.redirect('/console/', 302);
  }

  @Post('token')
  async token(
    @Req() request: FastifyRequest,
    @Body() body: { token?: unknown } | undefined,
    @Res() reply: FastifyReply,
  ) {
    const client = clientInfo(request);
    if (await this.failures.blocked(client.clientAddress))
      throw ApiError.tooMany('too many failed sign-ins from this address: retry later');
    const token = typeof body?.token === 'string' ? body.token.trim() : '';
    const who = token ? await this.principals.resolve(token) : null;
    if (!who || who.kind === 'service') {
      const refusal = ApiError.unauthorized(
        who ? 'a service account signs in to the API, not to the console' : 'token: is not a valid token or key',
      );
      throw await this.failures.failed(client, { action: 'sign-in.failed', presented: presented(token) }, refusal);
    }
    if (who.kind === 'person') {
      await this.people.signedIn(who.id);
      await this.startSession(reply, who, 'person', { personId: who.id }, client, 'sign-in.token');
    } else if (who.kind === 'admin') {
      await this.startSession(reply, who, 'admin', {}, client, 'sign-in.admin-token');
    } else {
      const key = await this.principals.authenticateKey(token);
      await this.startSession(reply, who, 'project_key', { apiKeyId: key!.apiKeyId }, client, 'sign-in.api-key');
    }
    void reply.code(200).send({ signedIn: true, csrfToken: await reply.generateCsrf() });
  }

  @Post('logout')
  async logout(@Req() request: FastifyRequest, @Res() reply: FastifyReply) {
    const raw = cookie(request, SESSION_COOKIE);
    const who = await this.sessions.principal(raw);
    if (who) {
      await this.changes.run(
        who,
        clientInfo(request),
        { action: 'sign-out', targetKind: 'session', targetId: SessionsService.label(raw!) },
        () => this.sessions.end(raw),
      );
    }
    this.cookies.clear(reply, SESSION_COOKIE);
    void reply.code(200).send({ signedIn: false });
  }

  private get config() {
    return this.cookies.signIn;
  }

  private async startSession(
    reply: FastifyReply,
    who: Principal,
    kind: SessionKind,
    holder: { personId?: string; apiKeyId?: string },
    client: ReturnType<typeof clientInfo>,
    action: string,
  ) {
    const raw = await this.changes.run(
      who,
      client,
      (r: string) => ({ action, targetKind: 'session', targetId: SessionsService.label(r) }),
      () => this.sessions.create(kind, holder, client),
    );
    this.cookies.set(reply, SESSION_COOKIE, raw, {
      sameSite: 'strict',
      maxAge: Math.floor(this.cookies.sessionMaxMs / 1000),
      path: '/',
    });
  }

  /** A page a person reads in the browser, for what only a browser asks (the OIDC redirects). */
  private page(reply: FastifyReply, status: number, message: string) {
    const text = message.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
    return reply
      .code(status)
      .header('content-type', 'text/html; charset=utf-8')
      .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'")
      .send(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>spendgate: not signed in</title>
<style>body{font:16px system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#1b1f24}</style></head>
<body><h1>Not signed in</h1><p data-testid="refusal">${text}</p><p><a href="/console/">Back to the console</a></p></body></html>`);
  }
}

function cookie(request: FastifyRequest, name: string): string | undefined {
  return (request.cookies as Record<string, string | undefined> | undefined)?.[name];
}
