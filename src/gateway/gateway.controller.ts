/** The vendor's three paths, unchanged, behind project keys. Thin: authenticate, call, reply. */
import { Body, Controller, Get, Headers, Inject, Param, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AuthFailures, presented } from '../auth/auth-failures.js';
import { bearer } from '../auth/api-keys.js';
import { attributionOf } from '../attribution/attribution.js';
import { ApiError } from '../common/api-error.js';
import { PrincipalsService, type KeyContext } from '../auth/principals.service.js';
import { VENDOR_API_ROOT } from '../catalog/vendor-paths.js';
import { RateLimiter } from './rate-limiter.js';
import type { GatewayReply } from './gateway-reply.js';
import { GatewayService } from './gateway.service.js';
import { finish, step, TracingService } from '../telemetry/tracing.service.js';
import type { Endpoint } from '../catalog/catalog.js';

@Controller(VENDOR_API_ROOT)
export class GatewayController {
  constructor(
    private readonly gateway: GatewayService,
    private readonly principals: PrincipalsService,
    @Inject(RateLimiter) private readonly limiter: RateLimiter,
    private readonly failures: AuthFailures,
    private readonly tracing: TracingService,
  ) {}

  @Post('chat/completions')
  async chat(
    @Req() request: FastifyRequest,
    @Headers() headers: Record<string, string | undefined>,
    @Body() body: unknown,
    @Res() reply: FastifyReply,
  ) {
    send(reply, await this.traced('chat', request, headers, body));
  }

  @Post('generations')
  async generations(
    @Req() request: FastifyRequest,
    @Headers() headers: Record<string, string | undefined>,
    @Body() body: unknown,
    @Res() reply: FastifyReply,
  ) {
    send(reply, await this.traced('generations', request, headers, body));
  }

  @Get('tasks/:taskId')
  async task(
    @Req() request: FastifyRequest,
    @Headers() headers: Record<string, string | undefined>,
    @Param('taskId') taskId: string,
    @Res() reply: FastifyReply,
  ) {
    const ctx = await this.authenticate(request, headers);
    send(reply, await this.gateway.poll(ctx, taskId));
  }

  /** A submission, traced when tracing is on (telemetry/tracing.service.ts): authenticate, then the gateway's steps. */
  private async traced(
    endpoint: Endpoint,
    request: FastifyRequest,
    headers: Record<string, string | undefined>,
    body: unknown,
  ): Promise<GatewayReply> {
    const t = this.tracing.start('spendgate.submission', () => ({
      'gen_ai.operation.name': endpoint === 'chat' ? 'chat' : 'generate_content',
      'http.request.method': 'POST',
    }));
    try {
      const ctx = await step(t, 'authenticate', () => this.authenticate(request, headers));
      t?.root.setAttribute('spendgate.project.id', ctx.projectId);
      this.requireJson(headers);
      const answer = await this.gateway.submit(
        endpoint,
        ctx,
        body,
        idempotencyKey(headers),
        attributionOf(headers, ctx.tags),
        t,
      );
      t?.root.setAttribute('http.response.status_code', answer.status);
      finish(t);
      return answer;
    } catch (error) {
      finish(t, error);
      throw error;
    }
  }

  /** Submissions are JSON (the vendor's contract); a form or text body is refused, not guessed at. */
  private requireJson(headers: Record<string, string | undefined>): void {
    const type = (headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/json') throw new ApiError(415, 4150, 'Content-Type must be application/json');
  }

  /** A good key is never slowed; a bad one costs its address a point (429 past the limit) and is audited. */
  private async authenticate(
    request: FastifyRequest,
    headers: Record<string, string | undefined>,
  ): Promise<KeyContext> {
    const key = bearer(headers.authorization);
    const ctx = await this.principals.authenticateKey(key);
    if (!ctx) {
      const client = { requestId: request.id, clientAddress: request.ip, userAgent: headers['user-agent'] ?? null };
      throw await this.failures.failed(
        client,
        { action: 'auth.failed', presented: presented(key) },
        ApiError.unauthorized(),
      );
    }
    if (!this.limiter.take(ctx.apiKeyId)) throw ApiError.tooMany('rate limit for this API key exceeded; retry shortly');
    return ctx;
  }
}

function idempotencyKey(headers: Record<string, string | undefined>): string | undefined {
  const key = headers['idempotency-key'];
  if (key === undefined) return undefined;
  if (key.length === 0 || key.length > 255) throw ApiError.badRequest('Idempotency-Key: must be 1 to 255 characters');
  return key;
}

function send(reply: FastifyReply, result: GatewayReply): void {
  void reply.code(result.status).header('content-type', result.contentType).send(result.body);
}
