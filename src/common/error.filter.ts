/** Every refusal in one JSON shape: { code, message, details? } (decisions §5). */
import { ArgumentsHost, Catch, HttpException, Logger, type ExceptionFilter } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { GraphQLError } from 'graphql';
import { ApiError, fromFastifyError } from './api-error.js';

/** GraphQL's name for each HTTP status a refusal can have: the one table both directions read. */
const GRAPHQL_CODES = {
  400: 'BAD_USER_INPUT',
  401: 'UNAUTHENTICATED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  409: 'CONFLICT',
  429: 'TOO_MANY_REQUESTS',
  503: 'SERVICE_UNAVAILABLE',
} as const;
export type GraphqlCode = (typeof GRAPHQL_CODES)[keyof typeof GRAPHQL_CODES];
const STATUS_OF = Object.fromEntries(
  Object.entries(GRAPHQL_CODES).map(([status, code]) => [code, Number(status)]),
) as Record<GraphqlCode, number>;

/** A refusal as a GraphQL error: the same message, its GraphQL code and HTTP status, and any details. */
export function graphqlError(message: string, status: number, details?: unknown): GraphQLError {
  const code = GRAPHQL_CODES[status as keyof typeof GRAPHQL_CODES] ?? 'BAD_REQUEST';
  return new GraphQLError(message, { extensions: { code, status, ...(details ? { details } : {}) } });
}

/** A refusal met before GraphQL ran (a body parser's, the CSRF check's) as GraphQL's answer shape. */
export function graphqlRefusalBody(error: ApiError): {
  data: null;
  errors: Array<{ message: string; extensions: Record<string, unknown> }>;
} {
  return {
    data: null,
    errors: [
      { message: error.message, extensions: graphqlError(error.message, error.status, error.details).extensions },
    ],
  };
}

/** The same, named by its GraphQL code (resolvers that refuse on their own). */
export function graphqlRefusal(message: string, code: GraphqlCode): GraphQLError {
  return graphqlError(message, STATUS_OF[code]);
}

/**
 * Any exception a resolver throws, as the GraphQL error it answers: a refusal with its code and
 * details; a lost database (the primary's or the reports replica's) said so, not as the driver's
 * error (which names internal addresses); a resolver's own GraphQLError as it is; anything else is
 * our fault: logged whole, told as "internal error" (a driver's or a runtime's message can name
 * tables, addresses, or values the client must not see).
 */
export function graphqlErrorOf(exception: unknown, logger: Pick<Logger, 'error'>): GraphQLError {
  const error =
    exception instanceof ApiError ? exception : isDatabaseUnavailable(exception) ? databaseUnavailable() : undefined;
  if (error) return graphqlError(error.message, error.status, error.details);
  if (exception instanceof GraphQLError) return exception;
  logger.error(`unhandled in GraphQL: ${(exception as Error)?.stack ?? String(exception)}`);
  return new GraphQLError('internal error', { extensions: { code: 'INTERNAL_SERVER_ERROR', status: 500 } });
}

@Catch()
export class ErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    // GraphQL: the same refusal, as a GraphQL error (field resolvers' errors, which Nest's filters
    // do not see, take the same path in graphql/error-format.ts).
    if (host.getType<string>() !== 'http') throw graphqlErrorOf(exception, this.logger);
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const error = toApiError(exception);
    if (error.status >= 500 && !(exception instanceof ApiError)) {
      this.logger.error(`unhandled: ${(exception as Error)?.stack ?? String(exception)}`);
    }
    if (error.retryAfter !== undefined) void reply.header('retry-after', String(error.retryAfter));
    void reply.code(error.status).header('content-type', 'application/json').send(error.toBody());
  }
}

export function toApiError(exception: unknown): ApiError {
  if (exception instanceof ApiError) return exception;
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    const message = status === 404 ? 'no such path' : exception.message;
    return new ApiError(status, status * 10, message);
  }
  if (isDatabaseUnavailable(exception)) return databaseUnavailable();
  return fromFastifyError(exception as { code?: string }) ?? new ApiError(500, 5000, 'internal error');
}

// Not "nothing was charged": the request may have been part-way through (decisions §10). The
// submission path says what happened to its own request where it knows (gateway.service.ts).
const databaseUnavailable = () => ApiError.serviceUnavailable('the database is unavailable; retry shortly');

const DB_DOWN_CODES = new Set([
  // A server that became a standby (a failover moved the primary away; decisions §17): it answers,
  // but refuses every write. The connection is dropped (Database) and a new one finds the primary.
  '25006',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08003',
  '08006',
  '08001',
  '08004',
]);

/** A lost or refused database connection (a restart, a failover, a standby), as opposed to a bad query. */
export function isDatabaseUnavailable(error: unknown): boolean {
  const e = error as { code?: string; message?: string; cause?: unknown } | undefined;
  if (!e) return false;
  if (e.code && DB_DOWN_CODES.has(e.code)) return true;
  if (/Connection terminated|connection timeout|Client has encountered a connection error/i.test(e.message ?? ''))
    return true;
  return e.cause ? isDatabaseUnavailable(e.cause) : false;
}
