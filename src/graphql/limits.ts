/**
 * GraphQL safety limits. A query is bounded before it runs, by three measures:
 *
 * - depth (MAX_DEPTH; MAX_SCHEMA_DEPTH under __schema and __type, whose standard query, the
 *   one GraphiQL and code generators send, nests 15 deep) and selected fields (MAX_FIELDS,
 *   fragments expanded): the size of the query text;
 * - cost (MAX_COST): the rows the answer can hold. Every object costs 1, scalars nothing, and a
 *   list multiplies what it holds by its size: `first` where the field takes it, otherwise the
 *   size written in LIST_SIZES. Introspection reads no rows: the depth limit bounds it. 160 aliases of tasks(first:
 * 200) with their ledger entries cost
 *   over 300,000 and are refused; one page of 200 tasks with every line and entry costs ~5,600.
 *
 * Reads then run on their own few connections with a statement timeout and a bounded number at
 * once per instance (bootstrap.ts), so what a query is allowed to do cannot starve submissions.
 */
import { getComplexity, type ComplexityEstimatorArgs } from 'graphql-query-complexity';
import {
  getNamedType,
  GraphQLError,
  isLeafType,
  isListType,
  isNonNullType,
  Kind,
  type ASTVisitor,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLOutputType,
  type GraphQLSchema,
  type SelectionSetNode,
  type ValidationContext,
} from 'graphql';

export const MAX_DEPTH = 10;
export const MAX_SCHEMA_DEPTH = 20;
export const MAX_FIELDS = 1_000;
export const MAX_COST = 10_000;

/** Sizes assumed for lists without `first` (`Type.field`); any other list counts as DEFAULT_LIST_SIZE. */
export const LIST_SIZES: Readonly<Record<string, number>> = {
  'Query.spendReport': 1_000,
  'Query.projects': 50,
  'Query.budgetStatus': 20,
  'Query.priceBookVersions': 20,
  'PriceBook.rates': 200,
  'Task.ledgerEntries': 8,
  'Charge.lines': 8,
  'SpendRow.totals': 2,
  'Dashboard.topModels': 10,
  'Dashboard.topProjects': 10,
  'Dashboard.budgetsAbove80': 20,
};
const DEFAULT_LIST_SIZE = 20;

/** The document's fragments by name, for expanding spreads. */
function fragmentsOf(document: DocumentNode): Map<string, FragmentDefinitionNode> {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const def of document.definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
  return fragments;
}

export function fieldLimit(context: ValidationContext): ASTVisitor {
  const fragments = fragmentsOf(context.getDocument());
  const count = (set: SelectionSetNode | undefined, seen: Set<string>): number => {
    if (!set) return 0;
    let n = 0;
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) n += 1 + count(sel.selectionSet, seen);
      else if (sel.kind === Kind.INLINE_FRAGMENT) n += count(sel.selectionSet, seen);
      else if (!seen.has(sel.name.value)) {
        const fragment = fragments.get(sel.name.value);
        n += count(fragment?.selectionSet, new Set([...seen, sel.name.value]));
      }
      if (n > MAX_FIELDS) return n;
    }
    return n;
  };
  return {
    OperationDefinition(node) {
      const n = count(node.selectionSet, new Set());
      if (n > MAX_FIELDS) {
        context.reportError(
          new GraphQLError(`query selects more than ${MAX_FIELDS} fields; split it into smaller queries`, {
            nodes: [node],
          }),
        );
      }
    },
  };
}

/**
 * The longest chain of fields in each operation, fragments expanded. Under __schema and __type the
 * limit is MAX_SCHEMA_DEPTH: the schema is in memory and __Type.ofType nests without end, so it is
 * still bounded, but the standard introspection query (depth 15) must pass.
 */
export function depthLimit(context: ValidationContext): ASTVisitor {
  const fragments = fragmentsOf(context.getDocument());
  const deepest = (set: SelectionSetNode | undefined, seen: ReadonlySet<string>): number => {
    if (!set) return 0;
    let max = 0;
    for (const sel of set.selections) {
      let d = 0;
      if (sel.kind === Kind.FIELD) d = 1 + deepest(sel.selectionSet, seen);
      else if (sel.kind === Kind.INLINE_FRAGMENT) d = deepest(sel.selectionSet, seen);
      else if (!seen.has(sel.name.value))
        d = deepest(fragments.get(sel.name.value)?.selectionSet, new Set([...seen, sel.name.value]));
      max = Math.max(max, d);
    }
    return max;
  };
  const rootFields = (set: SelectionSetNode, seen: ReadonlySet<string>): { name: string; depth: number }[] =>
    set.selections.flatMap((sel) => {
      if (sel.kind === Kind.FIELD) return [{ name: sel.name.value, depth: 1 + deepest(sel.selectionSet, seen) }];
      if (sel.kind === Kind.INLINE_FRAGMENT) return rootFields(sel.selectionSet, seen);
      const fragment = seen.has(sel.name.value) ? undefined : fragments.get(sel.name.value);
      return fragment ? rootFields(fragment.selectionSet, new Set([...seen, sel.name.value])) : [];
    });
  return {
    OperationDefinition(node) {
      let data = 0;
      let schema = 0;
      for (const field of rootFields(node.selectionSet, new Set())) {
        if (field.name === '__schema' || field.name === '__type') schema = Math.max(schema, field.depth);
        else data = Math.max(data, field.depth);
      }
      const over =
        data > MAX_DEPTH
          ? { depth: data, limit: MAX_DEPTH }
          : schema > MAX_SCHEMA_DEPTH
            ? { depth: schema, limit: MAX_SCHEMA_DEPTH }
            : undefined;
      if (over) {
        context.reportError(
          new GraphQLError(
            `query depth (${over.depth}) exceeds the query depth limit of ${over.limit}${over.limit === MAX_SCHEMA_DEPTH ? ' for introspection' : ''}`,
            { nodes: [node] },
          ),
        );
      }
    },
  };
}

/**
 * Objects cost 1 plus what they hold; scalars and enums are free. A field with `first` (a page: a
 * connection or a list) multiplies what one item costs by it; a connection's `edges` then count
 * once. Other lists multiply by their LIST_SIZES entry.
 */
function rowEstimator({ type, field, args, childComplexity }: ComplexityEstimatorArgs): number {
  // Introspection reads the in-memory schema, no rows: bounded by the depth limit, not priced.
  if (field.name.startsWith('__') || type.name.startsWith('__')) return 0;
  if (isLeafType(getNamedType(field.type))) return 0;
  if (typeof args.first === 'number') return 1 + childComplexity * Math.max(1, args.first);
  const perItem = 1 + childComplexity;
  if (!isList(field.type)) return perItem;
  if (type.name.endsWith('Connection') && field.name === 'edges') return perItem;
  return perItem * (LIST_SIZES[`${type.name}.${field.name}`] ?? DEFAULT_LIST_SIZE);
}

function isList(type: GraphQLOutputType): boolean {
  return isListType(isNonNullType(type) ? type.ofType : type);
}

/** The cost of the costliest operation in the document (the one executed is one of them). */
export function costOf(
  schema: GraphQLSchema,
  document: DocumentNode,
  variables: Record<string, unknown> | undefined,
): number {
  const operations = document.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
  let worst = 0;
  for (const op of operations) {
    const cost = getComplexity({
      schema,
      query: document,
      variables: variables ?? {},
      ...(op.name ? { operationName: op.name.value } : {}),
      estimators: [rowEstimator],
    });
    worst = Math.max(worst, cost);
  }
  return worst;
}

/** Whether the document asks for the schema (introspection): __schema or __type on the root, fragments followed. */
export function asksForSchema(document: DocumentNode): boolean {
  const fragments = fragmentsOf(document);
  const seen = new Set<string>();
  const onRoot = (set: SelectionSetNode): boolean =>
    set.selections.some((s) => {
      if (s.kind === Kind.FIELD) return s.name.value === '__schema' || s.name.value === '__type';
      if (s.kind === Kind.INLINE_FRAGMENT) return onRoot(s.selectionSet);
      if (seen.has(s.name.value)) return false;
      seen.add(s.name.value);
      const fragment = fragments.get(s.name.value);
      return fragment ? onRoot(fragment.selectionSet) : false;
    });
  return document.definitions.some((d) => d.kind === Kind.OPERATION_DEFINITION && onRoot(d.selectionSet));
}
