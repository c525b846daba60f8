/**
 * A field's answer written straight to JSON text: what GraphQL execution followed by
 * JSON.stringify gives for a selection over plain objects, without building the answer's object
 * tree first. For the one answer where that tree is most of the cost: spendReport, whose
 * 9,000-group month is 150,000 values (bench/FINDINGS.md; answered-directly.ts).
 *
 * Only what GraphQL would answer the same way by reading properties is written: object fields
 * without resolvers (graphql/plain-fields.ts), lists, non-null wrappers, scalars and enums, each
 * leaf through its own type's serialize(), and __typename of object types. A selection with
 * fragments, directives or a response key used twice gets no writer; a value GraphQL would have
 * refused or nulled (a null in a non-null place, a value serialize() refuses, a function) makes
 * the writer throw. Either way the field is answered by GraphQL's execution as before.
 *
 * The writer is one generated function per selection, as graphql-jit and fast-json-stringify do:
 * with one shared function per kind of node instead, V8's calls through it went megamorphic and
 * writing the report cost more than executing it (34 against 24 ms). The generated source holds
 * only names the GraphQL parser accepted (/^[_A-Za-z][_0-9A-Za-z]*$/, checked again here) and
 * JSON.stringify'd literals; values reach it only as data.
 */
import {
  getNullableType,
  isEnumType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  Kind,
  type GraphQLLeafType,
  type GraphQLOutputType,
  type SelectionSetNode,
} from 'graphql';

/** The answer's JSON as UTF-8 bytes. */
export type JsonWriter = (value: unknown) => Buffer;

/** Text written so far becomes bytes past this many characters (why: jsonWriter's comment). */
const CHUNK = 64 * 1024;

const NAME = /^[_A-Za-z][_0-9A-Za-z]*$/;

/** The writer for `selection` over values of `type`, or undefined where GraphQL's execution must answer. */
export function jsonWriter(type: GraphQLOutputType, selection: SelectionSetNode | undefined): JsonWriter | undefined {
  const leaves: Array<(v: unknown) => string> = [];
  let variables = 0;
  const fresh = () => `v${++variables}`;

  /** Statements that append `source`'s JSON to `out`, or undefined where there is no writer. */
  const emit = (t: GraphQLOutputType, set: SelectionSetNode | undefined, source: string): string | undefined => {
    const inner = getNullableType(t);
    let body: string | undefined;
    if (isListType(inner)) {
      const i = fresh();
      const item = fresh();
      const each = emit(inner.ofType, set, item);
      if (each === undefined) return undefined;
      body = `if (!Array.isArray(${source})) fail(); out += '[';
        for (let ${i} = 0; ${i} < ${source}.length; ${i}++) { const ${item} = ${source}[${i}]; if (${i}) out += ','; ${each} flush(); }
        out += ']';`;
    } else if (isObjectType(inner)) {
      if (!set) return undefined;
      const fields = inner.getFields();
      const keys = new Set<string>();
      const parts: string[] = [];
      for (const node of set.selections) {
        if (node.kind !== Kind.FIELD || node.directives?.length) return undefined;
        const name = node.name.value;
        const key = node.alias?.value ?? name;
        // a key twice: GraphQL merges, left to it
        if (!NAME.test(name) || !NAME.test(key) || keys.has(key)) return undefined;
        keys.add(key);
        const prefix = JSON.stringify(`${parts.length ? ',' : '{'}${JSON.stringify(key)}:`);
        if (name === '__typename') {
          parts.push(`out += ${prefix} + ${JSON.stringify(JSON.stringify(inner.name))};`);
          continue;
        }
        const field = fields[name];
        if (!field || field.resolve || field.args.length) return undefined;
        const value = fresh();
        const write = emit(field.type, node.selectionSet, value);
        if (write === undefined) return undefined;
        parts.push(
          `out += ${prefix}; const ${value} = ${source}.${name}; if (typeof ${value} === 'function') fail(); ${write}`,
        );
      }
      body = `if (typeof ${source} !== 'object') fail(); ${parts.length ? parts.join('\n') : "out += '{'"} out += '}';`;
    } else if (isScalarType(inner) || isEnumType(inner)) {
      if (set) return undefined;
      leaves.push(leafWriter(inner));
      body = `out += leaf[${leaves.length - 1}](${source});`;
    }
    if (body === undefined) return undefined;
    return `if (${source} === null || ${source} === undefined) { ${isNonNullType(t) ? 'fail();' : "out += 'null';"} } else { ${body} }`;
  };

  const statements = emit(type, selection, 'value');
  if (statements === undefined) return undefined;
  // The text is turned into bytes a chunk at a time: kept whole until the end, the 2.5 MB answer's
  // ~400,000 rope pieces lived through every young-generation collection of the write, each of
  // which copied them (every other 9,000-group answer took 23 ms to write instead of 9).
  const make = new Function(
    'leaf',
    'fail',
    'bytes',
    `return function write(value) {
      const chunks = []; let out = '';
      const flush = () => { if (out.length > ${CHUNK}) { chunks.push(bytes(out)); out = ''; } };
      ${statements}
      chunks.push(bytes(out)); return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
    };`,
  ) as (leaf: Array<(v: unknown) => string>, fail: () => never, bytes: (text: string) => Buffer) => JsonWriter;
  return make(
    leaves,
    () => {
      throw new TypeError('a value GraphQL would answer otherwise');
    },
    (text) => Buffer.from(text),
  );
}

/** A leaf's JSON: its type's serialize(), then quoted and escaped as JSON.stringify does. */
function leafWriter(type: GraphQLLeafType): (v: unknown) => string {
  // Safe between quotes as they are: decimal text (the Decimal scalar's own check) and enum names.
  if (type.name === 'Decimal' || isEnumType(type)) return (v) => `"${type.serialize(v) as string}"`;
  // Strings repeat in a report (keys, names): each is escaped once per writer's life, up to a bound.
  const seen = new Map<unknown, string>();
  return (v) => {
    const serialized = type.serialize(v);
    let json = seen.get(serialized);
    if (json === undefined) {
      json = JSON.stringify(serialized);
      if (seen.size < 10_000) seen.set(serialized, json);
    }
    return json;
  };
}
