/**
 * Who is calling a REST read (the CSV exports): a bearer token, or the console's session (whose
 * CSRF proof session-cookies.ts checked). A bad credential costs its address a point
 * (auth-failures.ts); a read with the ADMIN_TOKEN is audited, as over GraphQL.
 */
import { Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { AuditService } from '../audit/audit.service.js';
import { ApiError } from '../common/api-error.js';
import { clientInfo, graphqlContext, Principals } from '../graphql/graphql-auth.js';
import { isWarmUp } from '../reads/warm-up.js';
import type { Principal } from './access.js';
import { AuthFailures, presented } from './auth-failures.js';

@Injectable()
export class RestCallers {
  constructor(
    private readonly principals: Principals,
    private readonly audit: AuditService,
    private readonly failures: AuthFailures,
  ) {}

  async of(request: FastifyRequest): Promise<Principal> {
    const ctx = graphqlContext(request);
    const who = await this.principals.maybe(ctx);
    if (!who) {
      const refusal = ApiError.unauthorized('send Authorization: Bearer <a token or key>, or sign in to the console');
      if (!ctx.token && !ctx.session) throw refusal;
      throw await this.failures.failed(ctx.client, { action: 'auth.failed', presented: presented(ctx.token) }, refusal);
    }
    if (who.kind === 'admin' && !isWarmUp(request)) await this.audit.record(who, { action: 'admin-token.read', after: { path: request.url.split('?')[0] } }, clientInfo(request));
    return who;
  }
}
