/**
 * A Nest application on Fastify with spendgate's HTTP conventions: the body limit, pino logs with
 * secrets redacted, request ids, and every refusal (also those Fastify makes before a handler
 * runs) in the one error shape. Used by the main thread and by the reads worker.
 */
import { randomBytes } from 'node:crypto';
import type { DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyReply } from 'fastify';
import { ApiError, fromFastifyError } from '../common/api-error.js';
import { ErrorFilter, graphqlRefusalBody } from '../common/error.filter.js';
import type { Config } from '../config/config.js';
import { redactSecret } from '../auth/api-keys.js';
import type { ConnectionGuard } from './connection-guard.js';

/**
 * Fastify's error handler sees only what fails before a Nest handler runs (body parsing, limits):
 * Nest's own exception layer catches the rest. Nest would install a handler there as well as
 * ours, and Fastify warns about two handlers in one scope at every start (FSTWRN004). Declining
 * Nest's leaves one handler and no warning; the refusals are the same.
 */
class GatewayFastifyAdapter extends FastifyAdapter {
  override setErrorHandler(): ReturnType<FastifyAdapter['setErrorHandler']> {
    return this.getInstance();
  }
}

/**
 * `guard`: the public listener's limits (connection-guard.ts): timeouts, per-address connections,
 * parser errors in the refusal shape. The reads worker, which only the main thread calls, has none.
 */
export async function createNestApp(
  module: DynamicModule,
  config: Config,
  guard?: ConnectionGuard,
): Promise<NestFastifyApplication> {
  const adapter = new GatewayFastifyAdapter({
    bodyLimit: config.BODY_LIMIT_BYTES,
    ...(guard
      ? {
          serverFactory: guard.serverFactory,
          clientErrorHandler: guard.clientError,
          requestTimeout: config.REQUEST_TIMEOUT_MS,
        }
      : {}),
    logger:
      config.LOG_LEVEL === 'silent'
        ? false
        : {
            level: config.LOG_LEVEL,
            redact: {
              paths: [
                'req.headers.authorization',
                'req.headers.cookie',
                'req.headers["x-csrf-token"]',
                'req.headers["idempotency-key"]',
              ],
              censor: '[redacted]',
            },
            serializers: { req: loggedRequest },
          },
    genReqId: requestIds(),
    // Errors the router meets before any handler (a path parameter too long, a bad URL) in the one refusal shape.
    frameworkErrors: (error: Error, _request: unknown, reply: FastifyReply) => {
      const mapped =
        fromFastifyError(error as { code?: string; statusCode?: number; message?: string }) ??
        ApiError.badRequest('bad request');
      void reply.code(mapped.status).send(mapped.toBody());
    },
  });
  const app = await NestFactory.create<NestFastifyApplication>(module, adapter, {
    logger: config.LOG_LEVEL === 'silent' ? false : ['error', 'warn'],
  });
  app.useGlobalFilters(new ErrorFilter());
  if (guard)
    app
      .getHttpAdapter()
      .getInstance()
      .addHook('onResponse', async (request, reply) => guard.answered(request.raw.socket, reply.statusCode));
  // Body-parsing errors (bad JSON, too large, wrong type) happen before Nest sees the request and
  // would get Fastify's own shape: this handler gives them the one refusal shape.
  // On /graphql the same refusal comes in GraphQL's shape, with extensions { code, status }.
  app
    .getHttpAdapter()
    .getInstance()
    .setErrorHandler((error, request, reply) => {
      const mapped =
        fromFastifyError(error as { code?: string; statusCode?: number; message?: string }) ??
        new ApiError(500, 5000, 'internal error');
      const graphql = request.url.split('?')[0] === '/graphql';
      void reply.code(mapped.status).send(graphql ? graphqlRefusalBody(mapped) : mapped.toBody());
    });
  return app;
}

/** Query parameters whose values are credentials (an OIDC code and state, a token someone put in a URL). */
const SECRET_PARAMS = /^(code|state|token|access_token|id_token|refresh_token|session_state|key|api_key|secret)$/i;

/** A request as a log line shows it: the URL with credential-like values replaced (a secret never reaches a log). */
export function loggedRequest(request: {
  method: string;
  url: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}) {
  return {
    method: request.method,
    url: loggableUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

export function loggableUrl(url: string): string {
  const at = url.indexOf('?');
  const path = redactSecret(at < 0 ? url : url.slice(0, at));
  if (at < 0) return path;
  const query = url
    .slice(at + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq < 0 ? pair : pair.slice(0, eq);
      return eq >= 0 && SECRET_PARAMS.test(decodeSafe(name))
        ? `${name}=[redacted]`
        : redactSecret(decodeSafe(pair)) === decodeSafe(pair)
          ? pair
          : '[redacted]';
    })
    .join('&');
  return `${path}?${query}`;
}

function decodeSafe(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

/**
 * Request ids for log lines: 16 hex digits, a random per-process prefix and a counter, so ids
 * of several instances do not collide in practice, without a call into the system's random source
 * on every request (that call was 2 % of the gateway's CPU under load).
 */
function requestIds(): () => string {
  const instance = randomBytes(4).toString('hex');
  let seq = 0;
  return () => {
    seq = (seq + 1) >>> 0;
    return instance + seq.toString(16).padStart(8, '0');
  };
}
