/**
 * Checks every GraphQL operation before it runs (a Mercurius preExecution hook, where the
 * variables are known, so `first: $n` counts at its value):
 * - its cost must be within MAX_COST;
 * - in production the schema is shown only to a caller who is someone;
 * - every root field must have a rule in the permission table (auth/permissions.ts), and the
 *   caller's role must hold its capability: on every project (`global`), on the project its
 *   argument names (`project`), on the project of the thing its argument names (`target`, found
 *   by the look-up the thing's room registered), each time the field is asked (aliases included),
 *   or somewhere (the rest): refused here, before any resolver runs, so the table is what decides.
 * - no text argument may hold a NUL character (text-arguments.ts);
 * - a read with the ADMIN_TOKEN is audited (decisions §11: every use of the break-glass token).
 */
import {
  Kind,
  valueFromASTUntyped,
  type DocumentNode,
  type FieldNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionNode,
} from 'graphql';
import mercurius from 'mercurius';
import { hasCapability, requireAccess, requireOnTarget } from '../auth/access.js';
import { targetName, type TargetLookups } from '../auth/target-lookups.js';
import { graphqlError } from '../common/error.filter.js';
import { FIELD_RULES } from '../auth/permissions.js';
import type { AuditSink } from '../auth/audit-sink.js';
import { presented, type AuthFailures } from '../auth/auth-failures.js';
import { ApiError } from '../common/api-error.js';
import { asksForSchema, costOf, MAX_COST } from './limits.js';
import { nulInArguments } from './text-arguments.js';
import type { CallContext, Callers } from '../auth/callers.js';

const { ErrorWithProps } = mercurius;

export function operationGuard(
  callers: Callers,
  lookups: TargetLookups,
  audit: AuditSink,
  failures: AuthFailures,
  production: boolean,
) {
  return async (
    schema: GraphQLSchema,
    document: DocumentNode,
    mercuriusContext: object,
    variables?: Record<string, unknown>,
  ) => {
    const context = mercuriusContext as CallContext; // Mercurius merges callContext()'s fields into its own
    if (production && asksForSchema(document)) {
      const who = await callers.maybe(context);
      if (!who)
        throw new ErrorWithProps(
          'introspection needs a valid token in production: send Authorization: Bearer <a token or key>',
          { code: 'UNAUTHENTICATED', status: 401 },
          401,
        );
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
    // Before the permission checks too: their look-ups query with the arguments' text.
    const nul = nulInArguments(document, variables);
    if (nul)
      throw new ErrorWithProps(
        `${nul}: text must not contain the NUL character (U+0000)`,
        { code: 'BAD_USER_INPUT', status: 400 },
        400,
      );
    const occurrences = rootSelections(document);
    const fields = [...occurrences.keys()];
    if (fields.length === 0) return; // introspection only
    const who = await callers.maybe(context);
    for (const field of fields) {
      const rule = FIELD_RULES[field];
      if (!rule)
        throw new ErrorWithProps(
          `${field.split('.')[1]}: no permission rule names it, so nobody may use it`,
          { code: 'FORBIDDEN', status: 403 },
          403,
        );
      if (!who) {
        let refusal = ApiError.unauthorized(
          context.token
            ? 'the bearer token is not a valid token or key'
            : context.session
              ? 'the session has ended: sign in again'
              : 'send Authorization: Bearer <a token or key>, or sign in to the console',
        );
        if (context.token || context.session)
          refusal = await failures.failed(
            context.client,
            { action: 'auth.failed', presented: presented(context.token) },
            refusal,
          );
        throw new ErrorWithProps(
          refusal.message,
          { code: refusal.status === 429 ? 'TOO_MANY_REQUESTS' : 'UNAUTHENTICATED', status: refusal.status },
          refusal.status,
        );
      }
      if (rule.scope === 'self' && who.kind !== 'person' && who.kind !== 'service' && who.kind !== 'admin') {
        throw new ErrorWithProps(
          `${field.split('.')[1]}: only a person or a service account has tokens of its own`,
          { code: 'FORBIDDEN', status: 403 },
          403,
        );
      }
      const name = field.split('.')[1]!;
      try {
        if (rule.capability && (!hasCapability(who, rule.capability) || rule.scope === 'global'))
          requireAccess(who, rule.capability, 'all', name);
        if (rule.capability && rule.arg && (rule.scope === 'project' || rule.scope === 'target')) {
          for (const node of occurrences.get(field) ?? []) {
            // An ID may arrive as a number, which GraphQL turns into text: checked as that text.
            const value = argument(node, rule.arg, variables);
            if (value === undefined || value === null) {
              if (rule.absentMeansAll) requireAccess(who, rule.capability, 'all', name);
              continue; // a required id missing is GraphQL's own refusal
            }
            if (rule.scope === 'project') requireAccess(who, rule.capability, String(value), name);
            else
              requireOnTarget(
                who,
                rule.capability,
                await lookups.projectOf(rule.target!, String(value)),
                targetName(rule.target!, String(value)),
                name,
              );
          }
        }
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        const { code } = graphqlError(error.message, error.status).extensions;
        throw new ErrorWithProps(error.message, { code, status: error.status }, error.status);
      }
    }
    const operation = document.definitions.find(
      (d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION,
    );
    if (who?.kind === 'admin' && !context.internal && operation?.operation === 'query') {
      await audit.record(who, { action: 'admin-token.read', after: { fields } }, context.client);
    }
  };
}

/**
 * `Query.tasks`, `Mutation.setBudget`: the root fields an operation selects (fragments included),
 * each with every place it is asked (a field asked twice under two aliases is checked twice).
 */
function rootSelections(document: DocumentNode): Map<string, FieldNode[]> {
  const out = new Map<string, FieldNode[]>();
  for (const definition of document.definitions) {
    if (definition.kind !== Kind.OPERATION_DEFINITION) continue;
    const root =
      definition.operation === 'mutation'
        ? 'Mutation'
        : definition.operation === 'subscription'
          ? 'Subscription'
          : 'Query';
    const visit = (selections: readonly SelectionNode[]) => {
      for (const s of selections) {
        if (s.kind === Kind.FIELD) {
          if (!s.name.value.startsWith('__'))
            out.set(`${root}.${s.name.value}`, [...(out.get(`${root}.${s.name.value}`) ?? []), s]);
        } else if (s.kind === Kind.INLINE_FRAGMENT) visit(s.selectionSet.selections);
        else {
          const fragment = document.definitions.find(
            (d) => d.kind === Kind.FRAGMENT_DEFINITION && d.name.value === s.name.value,
          );
          if (fragment && fragment.kind === Kind.FRAGMENT_DEFINITION) visit(fragment.selectionSet.selections);
        }
      }
    };
    visit(definition.selectionSet.selections);
  }
  return out;
}

/** An argument's value as sent (a literal, or the variable it names). */
function argument(node: FieldNode, name: string, variables: Record<string, unknown> | undefined): unknown {
  const arg = node.arguments?.find((a) => a.name.value === name);
  return arg ? valueFromASTUntyped(arg.value, variables) : undefined;
}
