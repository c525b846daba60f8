/**
 * A cached report sent over REST (a CSV, a FOCUS export, a statement; decisions §22): its ETag (the
 * digest of its bytes), `Cache-Control: private, immutable` when every month it covers is closed and
 * `private, no-cache` otherwise, when its figures were computed, the books stamp it claims and whether
 * it came from memory (`X-Spendgate-Cache: hit` or `computed`); a
 * request that already holds it (`If-None-Match`) is answered 304 with no body.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CachedAnswer } from './report-cache.service.js';
import { holds } from './cache-entries.js';

export function sendAnswer(
  request: FastifyRequest,
  reply: FastifyReply,
  answer: CachedAnswer<Buffer | string>,
  headers: Record<string, string>,
): FastifyReply {
  for (const [name, value] of Object.entries(headers)) void reply.header(name, value);
  if (!answer.digest) return reply.send(answer.value); // the cache is off: no validators
  const etag = `"${answer.digest}"`;
  void reply
    .header('etag', etag)
    .header('cache-control', answer.closed ? 'private, immutable' : 'private, no-cache')
    .header('x-spendgate-computed-at', answer.computedAt.toISOString())
    .header('x-spendgate-books-version', answer.version)
    .header('x-spendgate-cache', answer.hit ? 'hit' : 'computed');
  if (holds(request.headers, etag)) return reply.code(304).send();
  return reply.send(answer.value);
}
