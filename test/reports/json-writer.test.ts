/**
 * The JSON writer of directly answered fields (src/graphql/json-writer.ts) against graphql-js's
 * own execution of the same selection: for any values (strings of any characters, decimals good
 * and bad, integers in and out of Int's range, nulls where they are and are not allowed, unknown
 * enum values), either GraphQL answers without errors and the writer writes exactly
 * JSON.stringify of GraphQL's answer, or GraphQL has an error and the writer refuses (so the field
 * goes through GraphQL). Selections it cannot write (fragments, directives, a key twice) get no writer.
 */
import fc from 'fast-check';
import {
  execute,
  GraphQLEnumType,
  GraphQLInt,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLScalarType,
  GraphQLSchema,
  GraphQLString,
  parse,
  type FieldNode,
  type GraphQLNullableType,
  type OperationDefinitionNode,
} from 'graphql';
import { jsonWriter } from '../../src/graphql/json-writer.js';
import { DecimalScalar, isDecimalText } from '../../src/graphql/scalars.js';

const decimalScalar = new DecimalScalar();
const Decimal = new GraphQLScalarType({ name: 'Decimal', serialize: (v) => decimalScalar.serialize(v) });
const Unit = new GraphQLEnumType({ name: 'Unit', values: { USD: { value: 'USD' }, CREDITS: { value: 'CREDITS' } } });
const nn = <T extends GraphQLNullableType>(t: T) => new GraphQLNonNull(t);
const Money = new GraphQLObjectType({
  name: 'Money',
  fields: { unit: { type: nn(Unit) }, amount: { type: nn(Decimal) } },
});
const Tokens = new GraphQLObjectType({
  name: 'TokenSums',
  fields: { input: { type: nn(Decimal) }, output: { type: nn(Decimal) } },
});
const Row = new GraphQLObjectType({
  name: 'SpendRow',
  fields: {
    keys: { type: nn(new GraphQLList(nn(GraphQLString))) },
    totals: { type: nn(new GraphQLList(nn(Money))) },
    tasks: { type: nn(GraphQLInt) },
    tokens: { type: nn(Tokens) },
    videoSeconds: { type: nn(Decimal) },
    apiKeyName: { type: GraphQLString },
  },
});
let rows: unknown = [];
const schema = new GraphQLSchema({
  query: new GraphQLObjectType({
    name: 'Query',
    fields: { report: { type: nn(new GraphQLList(nn(Row))), resolve: () => rows } },
  }),
});

function writerFor(query: string) {
  const document = parse(query);
  const field = (document.definitions[0] as OperationDefinitionNode).selectionSet.selections[0] as FieldNode;
  return {
    document,
    write: jsonWriter(schema.getQueryType()!.getFields().report!.type, field.selectionSet),
    key: field.alias?.value ?? 'report',
  };
}

const SELECTIONS = [
  '{ report { keys totals { unit amount } tasks tokens { input output } videoSeconds apiKeyName } }',
  '{ r: report { __typename n: apiKeyName t: tasks totals { __typename a: amount u: unit } tokens { output __typename } keys } }',
  '{ report { keys } }',
];

const decimal = fc.oneof(
  fc.tuple(fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }), fc.nat({ max: 12 })).map(([v, scale]) => {
    const s = (v < 0n ? -v : v).toString().padStart(scale + 1, '0');
    return `${v < 0n ? '-' : ''}${scale ? `${s.slice(0, -scale)}.${s.slice(-scale)}` : s}`;
  }),
  fc.constantFrom('0', '0.000', '1e5', 'NaN', ' 1', '', '1.', '.5', '-0'),
);
const int = fc.oneof(
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
  fc.constantFrom(2 ** 31, -(2 ** 31) - 1, 1.5, Number.NaN),
);
const text = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.constantFrom('"', '\\', '\n', '\u2028', '\u0000', '✓ Ünïcode', '🔥'),
);
const row = fc.record({
  keys: fc.oneof(
    { weight: 9, arbitrary: fc.array(text, { maxLength: 4 }) },
    { weight: 1, arbitrary: fc.constant([null]) },
  ),
  totals: fc.array(
    fc.record({
      unit: fc.oneof(
        { weight: 9, arbitrary: fc.constantFrom('USD', 'CREDITS') },
        { weight: 1, arbitrary: fc.constant('EUR') },
      ),
      amount: decimal,
    }),
    { maxLength: 2 },
  ),
  tasks: int,
  tokens: fc.oneof(
    { weight: 9, arbitrary: fc.record({ input: decimal, output: decimal }) },
    { weight: 1, arbitrary: fc.constant(null) },
  ),
  videoSeconds: decimal,
  apiKeyName: fc.option(text),
});

test.each(SELECTIONS)('the writer writes what GraphQL answers, or refuses where GraphQL errs: %s', (query) => {
  const { document, write, key } = writerFor(query);
  expect(write).toBeDefined();
  let written = 0;
  fc.assert(
    fc.property(fc.array(row, { maxLength: 6 }), (value) => {
      rows = value;
      const result = execute({ schema, document }) as { data?: Record<string, unknown> | null; errors?: unknown[] };
      if (result.errors?.length) {
        expect(() => write!(value)).toThrow();
      } else {
        expect(write!(value).toString('utf8')).toBe(JSON.stringify(result.data![key]));
        written++;
      }
    }),
    { numRuns: 400 },
  );
  expect(written).toBeGreaterThan(20);
});

test('a large answer (many 64 KB chunks, characters outside ASCII) is written as GraphQL answers it', () => {
  const { document, write, key } = writerFor(SELECTIONS[0]!);
  rows = Array.from({ length: 5000 }, (_, i) => ({
    keys: [`prøject ✓ ${i}`, '🔥 "quoted" \\ model', `2026-10-${String(1 + (i % 30)).padStart(2, '0')}`],
    totals: [{ unit: i % 3 ? 'USD' : 'CREDITS', amount: `${i}.${i % 97}` }],
    tasks: i,
    tokens: { input: String(i * 13), output: '0' },
    videoSeconds: '0',
    apiKeyName: i % 2 ? null : `key ${i} ü`,
  }));
  const result = execute({ schema, document }) as { data: Record<string, unknown> };
  const written = write!(rows);
  expect(written.length).toBeGreaterThan(10 * 64 * 1024);
  expect(written.toString('utf8')).toBe(JSON.stringify(result.data[key]));
});

test('selections that GraphQL answers otherwise get no writer: fragments, directives, a key twice, an unknown field', () => {
  for (const query of [
    '{ report { ...F } } fragment F on SpendRow { keys }',
    '{ report { ... on SpendRow { keys } } }',
    '{ report { keys @include(if: true) } }',
    '{ report { keys keys } }',
    '{ report { a: tasks a: tasks } }',
    '{ report { nope } }',
  ]) {
    expect(writerFor(query).write).toBeUndefined();
  }
});

test('the Decimal check by hand accepts exactly what /^-?\\d+(\\.\\d+)?$/ accepts (fast-check)', () => {
  const expression = /^-?\d+(\.\d+)?$/;
  const near = fc
    .array(fc.constantFrom('-', '.', '0', '1', '9', 'e', ' ', '+', '٣', '/', ':'), { maxLength: 8 })
    .map((c) => c.join(''));
  fc.assert(
    fc.property(fc.oneof(near, fc.string(), decimal), (text) =>
      expect(isDecimalText(text)).toBe(expression.test(text)),
    ),
    { numRuns: 20_000 },
  );
});
