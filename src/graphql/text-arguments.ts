/**
 * Text no argument may hold: the NUL character (U+0000). PostgreSQL's text cannot store it, so a
 * value carrying one fails at the first query that uses it, as the database's error (a 500), in
 * whichever resolver forgot to check. Refused here, once, for every field: in the variables and in
 * the literals of the document, naming where it was.
 */
import { Kind, visit, type ASTNode, type DocumentNode } from 'graphql';

const NUL = '\u0000';

/** Where the first NUL is (`filter.tags[1]`, `scopeValue`; `$v` for a variable no argument uses), or undefined. */
export function nulInArguments(
  document: DocumentNode,
  variables: Record<string, unknown> | undefined,
): string | undefined {
  for (const [name, value] of Object.entries(variables ?? {})) {
    const at = nulIn(value, '');
    if (at !== undefined) return `${argumentOf(document, name) ?? `$${name}`}${at}`;
  }
  // A literal carries a NUL as the character itself or as an escape (\u0000, \u{0}): a document
  // with neither is not walked (a walk of the console's queries costs ~15 µs).
  const source = document.loc?.source.body;
  if (source !== undefined && !source.includes(NUL) && !source.includes('\\u')) return undefined;
  let found: string | undefined;
  visit(document, {
    StringValue(node, _key, parent, _path, ancestors) {
      // ancestors stop above the parent (the argument itself, for a plain literal)
      if (found === undefined && node.value.includes(NUL))
        found = literalPath([...ancestors, ...(parent ? [parent] : [])]) ?? 'a string literal';
    },
  });
  return found;
}

function nulIn(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return value.includes(NUL) ? path : undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const at = nulIn(value[i], `${path}[${i}]`);
      if (at !== undefined) return at;
    }
  } else if (value && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      const at = nulIn(inner, `${path}.${key}`);
      if (at !== undefined) return at;
    }
  }
  return undefined;
}

/** The argument (and the input fields inside it) where the variable `name` is first used. */
function argumentOf(document: DocumentNode, name: string): string | undefined {
  let found: string | undefined;
  visit(document, {
    Variable(node, _key, parent, _path, ancestors) {
      if (found !== undefined || node.name.value !== name) return;
      if (parent && !Array.isArray(parent) && (parent as ASTNode).kind === Kind.VARIABLE_DEFINITION) return;
      found = literalPath([...ancestors, ...(parent ? [parent] : [])]);
    },
  });
  return found;
}

/** The argument (and the input fields inside it) a literal sits in. */
function literalPath(ancestors: ReadonlyArray<ASTNode | ReadonlyArray<ASTNode>>): string | undefined {
  const names: string[] = [];
  for (const node of ancestors) {
    if (Array.isArray(node)) continue;
    const n = node as ASTNode;
    if (n.kind === Kind.ARGUMENT || n.kind === Kind.OBJECT_FIELD) names.push(n.name.value);
  }
  return names.length ? names.join('.') : undefined;
}
