/**
 * One GraphQL request the reads worker sends itself before it says it is listening. The first
 * request of a fresh process paid for compiling the whole read path (graphql-js, the resolvers,
 * Prisma's query engine, the report statements): the console's first page after a start took
 * ~1.1 s against ~0.6 s for the next ones (bench:console on 1M tasks). Over January 2000, so it reads
 * next to nothing; a failure here is logged nowhere and changes nothing.
 */
import type { FastifyInstance } from 'fastify';
import { warmUpHeaders } from '../auth/warm-up-mark.js';

const DAY = 'from: "2000-01-01T00:00:00Z", to: "2000-01-02T00:00:00Z"';
const MONTH = 'from: "2000-01-01T00:00:00Z", to: "2000-02-01T00:00:00Z"'; // user reports are kept per month

export const WARM_UP_QUERY = `{
  viewer { admin }
  projects { id name }
  totals: spendReport(${DAY}, first: 1) { tasks totals { unit amount } }
  series: spendReport(${DAY}, groupBy: ["day", "model"]) { keys totals { unit amount } }
  top: spendReport(${MONTH}, groupBy: ["user"], unit: USD, orderBy: AMOUNT_DESC, first: 5) { keys tasks totals { unit amount } }
  tagNames(${DAY})
}`;

/** Waits at most `limitMs`: a reports database that does not answer must not hold up the start. */
export async function warmUp(fastify: FastifyInstance, adminToken: string, limitMs = 3_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const request = fastify
    .inject({
      method: 'POST',
      url: '/graphql',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json', ...warmUpHeaders() },
      payload: JSON.stringify({ query: WARM_UP_QUERY }),
    })
    .then(
      () => undefined,
      () => undefined,
    );
  await Promise.race([request, new Promise<void>((resolve) => (timer = setTimeout(resolve, limitMs).unref()))]);
  clearTimeout(timer);
}
