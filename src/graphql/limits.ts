/**
 * GraphQL safety limits: a maximum depth (Mercurius' queryDepth) and a maximum number of selected
 * fields per operation (fragments expanded), so one request cannot ask for unbounded work.
 * Lists are bounded separately (tasks: first ≤ 200; reports are grouped roll-ups).
 */
import { GraphQLError, Kind, type ASTVisitor, type FragmentDefinitionNode, type SelectionSetNode, type ValidationContext } from 'graphql';

export const MAX_DEPTH = 10;
export const MAX_FIELDS = 1_000;

export function fieldLimit(context: ValidationContext): ASTVisitor {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const def of context.getDocument().definitions) {
    if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
  }
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
        context.reportError(new GraphQLError(`query selects more than ${MAX_FIELDS} fields; split it into smaller queries`, { nodes: [node] }));
      }
    },
  };
}
