/**
 * Who is calling a REST read (the CSV exports): a bearer token, or the console's session (whose
 * CSRF proof session-cookies.ts checked). A bad credential costs its address a point
 * (auth-failures.ts); a read with the ADMIN_TOKEN is audited, as over GraphQL.
 */
import { Inject, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../common/api-error.js';
import { AUDIT_SINK, type AuditSink } from './audit-sink.js';
import { clientInfo, callContext, Callers } from './callers.js';
import { isWarmUp } from './warm-up-mark.js';
import type { Principal } from './access.js';
import { AuthFailures, presented } from './auth-failures.js';

@Injectable()
export class RestCallers {
  constructor(
    private readonly callers: Callers,
    @Inject(AUDIT_SINK) private readonly audit: AuditSink,
    private readonly failures: AuthFailures,
  ) {}

  /** `audit: false` only where the request that follows is audited itself (a statement's pre-check). */
  async of(request: FastifyRequest, options: { audit?: boolean } = {}): Promise<Principal> {
    const ctx = callContext(request);
    const who = await this.callers.maybe(ctx);
    if (!who) {
      const refusal = ApiError.unauthorized('send Authorization: Bearer <a token or key>, or sign in to the console');
      if (!ctx.token && !ctx.session) throw refusal;
      throw await this.failures.failed(ctx.client, { action: 'auth.failed', presented: presented(ctx.token) }, refusal);
    }
    if (who.kind === 'admin' && !isWarmUp(request) && options.audit !== false)
      await this.audit.record(
        who,
        { action: 'admin-token.read', after: { path: request.url.split('?')[0] } },
        clientInfo(request),
      );
    return who;
  }
}
