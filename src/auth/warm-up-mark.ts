/**
 * The mark of the reads worker's own warm-up request (reads/warm-up.ts): a caller auth knows to be
 * the process itself, whose admin reads are not audited. A secret known to this process only, so
 * no client can send it.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';

const WARM_UP_SECRET = randomBytes(16).toString('hex');
const WARM_UP_HEADER = 'x-spendgate-warm-up';

export function isWarmUp(request: FastifyRequest): boolean {
  return request.headers[WARM_UP_HEADER] === WARM_UP_SECRET;
}

/** The header that marks a request as the warm-up. */
export function warmUpHeaders(): Record<string, string> {
  return { [WARM_UP_HEADER]: WARM_UP_SECRET };
}
