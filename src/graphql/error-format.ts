/**
 * GraphQL's answers to bad input, kept small: graphql-js names an invalid variable with its whole
 * value ("Variable "$a" got invalid value "999…" (140,000 digits)"), so a hostile value would come
 * back whole in the error and in any log of it. The value is clipped to 40 characters; the reason
 * after it is kept.
 */
import mercurius from 'mercurius';
import { fromFastifyError } from '../common/api-error.js';
import { Logger } from '@nestjs/common';
import { GraphQLError } from 'graphql';
import { graphqlErrorOf, graphqlRefusalBody } from '../common/error.filter.js';

const logger = new Logger('Errors');

const ECHO = /(got invalid value )("(?:[^"\\]|\\.)*"|[^;]*)/s;

export function clipEcho(message: string): string {
  return message.replace(
    ECHO,
    (_all, lead: string, value: string) => `${lead}${value.length > 40 ? `${value.slice(0, 40)}…` : value}`,
  );
}

/**
 * Every error carries `extensions: { code, status }` (the README's promise), and the HTTP status is
 * decided here once, by what failed: mercurius answered the same bad variable 400 or 200 depending
 * on whether its document was cached (decisions §5). A request that never ran (a syntax error,
 * a document that does not validate, a bad variable, no query, a guard's refusal) answers its
 * errors' status (400 unless they say otherwise); one that ran answers 200 with its errors, each
 * naming its status in extensions, as GraphQL over HTTP has it.
 */
export const errorFormatter: typeof mercurius.defaultErrorFormatter = (execution, context) => {
  // A hook's refusal before GraphQL ran (the CSRF check's 403, a body's 413) keeps its own status,
  // in the one refusal's words (common/api-error.ts).
  const only =
    execution.errors?.length === 1
      ? (execution.errors[0] as { originalError?: { statusCode?: unknown; code?: string; errors?: unknown } })
          .originalError
      : undefined;
  const hook =
    only && typeof only.statusCode === 'number' && only.statusCode !== 400 && only.code?.startsWith('FST_')
      ? fromFastifyError(only as { code?: string; statusCode?: number; message?: string })
      : undefined;
  if (hook) return { statusCode: hook.status, response: graphqlRefusalBody(hook) };
  const formatted = mercurius.defaultErrorFormatter({ ...execution, errors: execution.errors.map(asRefusal) }, context);
  let status = 0;
  let ran = formatted.response.data !== null && formatted.response.data !== undefined;
  for (const error of formatted.response.errors ?? []) {
    const e = error as { message: string; path?: unknown; extensions?: { code?: string; status?: number } };
    if (e.message === 'Unknown query' || e.message === 'body must be object')
      e.message = 'no query: send a JSON body {"query": "..."} with Content-Type: application/json';
    e.message = clipEcho(e.message);
    if (typeof e.extensions?.status !== 'number')
      e.extensions = { ...e.extensions, code: e.extensions?.code ?? graphqlCodeOf(e.message), status: 400 };
    if (e.path !== undefined) ran = true;
    status = Math.max(status, e.extensions.status!);
  }
  return { ...formatted, statusCode: ran || status === 0 ? 200 : status };
};

/**
 * A field resolver's exception (@ResolveField, a plain field): Nest's filters see only the root
 * fields', so these arrive as thrown. Each answers as a root field's would (graphqlErrorOf): a
 * refusal with its code, anything else an internal error, never the exception's own message.
 */
function asRefusal(error: GraphQLError): GraphQLError {
  const original = error.originalError;
  if (!original || original instanceof GraphQLError || error.path === undefined) return error;
  const refusal = graphqlErrorOf(original, logger);
  return new GraphQLError(refusal.message, {
    nodes: error.nodes,
    path: error.path,
    originalError: refusal,
    extensions: refusal.extensions,
  });
}

function graphqlCodeOf(message: string): string {
  if (message.startsWith('Syntax Error')) return 'GRAPHQL_PARSE_FAILED';
  if (message.startsWith('no query')) return 'BAD_REQUEST';
  return 'GRAPHQL_VALIDATION_FAILED';
}
