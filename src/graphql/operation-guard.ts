/**
 * Checks every GraphQL operation before it runs (a Mercurius preExecution hook, where the
 * variables are known, so `first: $n` counts at its value): its cost must be within MAX_COST,
 * and in production the schema is shown only to a caller with a valid token.
 */
import type { DocumentNode, GraphQLSchema } from 'graphql';
import mercurius from 'mercurius';
import type { FastifyReply } from 'fastify';
import { bearer } from '../auth/api-keys.js';
import type { PrincipalsService } from '../auth/principals.service.js';
import { asksForSchema, costOf, MAX_COST } from './limits.js';

const { ErrorWithProps } = mercurius;

export function operationGuard(principals: PrincipalsService, production: boolean) {
  return async (schema: GraphQLSchema, document: DocumentNode, context: { reply: FastifyReply }, variables?: Record<string, unknown>) => {
    if (production && asksForSchema(document)) {
      const who = await principals.resolve(bearer(context.reply.request.headers.authorization));
      if (!who) {
        throw new ErrorWithProps('introspection needs a valid token in production: send Authorization: Bearer <ADMIN_TOKEN or project API key>', { code: 'UNAUTHENTICATED', status: 401 }, 401);
      }
    }
    const cost = costOf(schema, document, variables);
    if (cost > MAX_COST) {
      throw new ErrorWithProps(
        `query costs ${cost}, above the limit of ${MAX_COST}: every object in the answer costs 1 and lists multiply by their size ` +
          '(first, or the page size); ask for fewer rows (a smaller first), fewer aliases, or split the query',
        { code: 'BAD_USER_INPUT', status: 400, cost, maxCost: MAX_COST },
        400,
      );
    }
  };
}
