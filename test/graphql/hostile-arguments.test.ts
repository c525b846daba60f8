/**
 * Hostile arguments to GraphQL and the report CSVs: every refusal a 4xx in the one error shape,
 * naming what is wrong, never an internal error (decisions §5), and a refused change writes nothing.
 * First the cases a fuzzer of every root field found (each a 500 before its fix), then that fuzzer
 * itself: every Query and Mutation field with generated arguments (fast-check; GRAPHQL_FUZZ_SEED
 * replays another run).
 */
import fc from 'fast-check';
import { getIntrospectionQuery, type IntrospectionQuery, type IntrospectionTypeRef } from 'graphql';
import type { Gateway } from '../../src/bootstrap.js';
import {
  ADMIN,
  freshDatabase,
  gateway,
  graphql,
  http,
  projectWithKey,
  sql,
  submitChat,
  type GraphqlAnswer,
  type GraphqlData,
} from '../support/harness.js';

let gw: Gateway;
let projectId: string;
let taskId: string;
const NUL = 'a\u0000b';

beforeAll(async () => {
  gw = await gateway(await freshDatabase(), { SIMULATOR_DELAY_MS: '50' });
  let key: string;
  ({ projectId, key } = await projectWithKey(gw));
  const submitted = await submitChat(gw, key, {
    model: 'gpt-5.6-luna',
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 20,
  });
  taskId = String(submitted.body.data?.taskId);
});
afterAll(() => gw.close());

const admin = async (query: string, variables?: Record<string, unknown>) => graphql(gw, ADMIN, query, variables);
const refusal = (r: { status: number; body: GraphqlAnswer<GraphqlData> }) => ({
  status: r.body.errors?.[0]?.extensions?.status,
  code: r.body.errors?.[0]?.extensions?.code,
  message: r.body.errors?.[0]?.message,
});
const rowsWritten = async () =>
  (
    await sql<{ n: string }>(
      gw,
      `SELECT ((SELECT count(*) FROM budget) + (SELECT count(*) FROM usage_limit) + (SELECT count(*) FROM audit_record))::text AS n`,
    )
  )[0]!.n;

test('a report whose range ends in the year 9999 is answered, not a 500 (its stamp named the month after as +010000)', async () => {
  const report = await admin(`query($f: DateTime!, $t: DateTime!) { spendReport(from: $f, to: $t) { tasks } }`, {
    f: '2026-01-01T00:00:00Z',
    t: '9999-12-31T00:00:00Z',
  });
  expect(report.body.errors).toBeUndefined();
  expect(Array.isArray(report.body.data?.spendReport)).toBe(true);
  const names = await admin(`query($f: DateTime!, $t: DateTime!) { tagNames(from: $f, to: $t) }`, {
    f: '2026-12-02T00:00:00Z',
    t: '9999-12-31T23:59:59.999Z',
  });
  expect(names.body.errors).toBeUndefined();
  for (const csv of ['spend.csv', 'focus.csv']) {
    const res = await http(`${gw.url}/reports/${csv}?from=2026-01-01&to=9999-12-31`, { key: ADMIN });
    expect({ csv, status: res.status }).toEqual({ csv, status: 200 });
  }
});

test('a date-time outside years 0001-9999 at UTC (an offset can carry it there) is refused naming it (PostgreSQL has no year 0)', async () => {
  for (const t of ['9999-12-31T19:00:00-05:00', '0001-01-01T00:00:00+01:00', '0000-06-01T00:00:00Z']) {
    const names = await admin(`query($t: DateTime!) { tagNames(from: "2026-01-01T00:00:00Z", to: $t) }`, { t });
    expect({ http: names.status, ...refusal(names) }).toEqual({
      http: 400,
      status: 400,
      code: 'BAD_USER_INPUT',
      message: expect.stringContaining(`"${t}" is not a real date-time (ISO 8601 in years 0001–9999 UTC`),
    });
  }
});

test('a year below 100 is that year, not 1900 and after (Date.UTC reads two-digit years so)', async () => {
  const rowsBefore = await rowsWritten();
  const adjusted = await admin(
    `mutation($p: ID!, $at: DateTime) { adjustLedger(projectId: $p, unit: USD, amount: "1", reason: "r", effectiveAt: $at) }`,
    { p: projectId, at: '0050-06-01T00:00:00Z' },
  );
  expect(refusal(adjusted)).toMatchObject({
    status: 400,
    message: expect.stringMatching(/^effectiveAt: 0050-06-01T00:00:00.000Z /),
  });
  expect(await rowsWritten()).toBe(rowsBefore);
});

test("a page's cursor that is not one is refused, not read as a year past 9999 or a NUL", async () => {
  for (const after of ['+275760-09-13T00:00:00Z', '-000001-01-01T00:00:00Z', '10000', '0000-01-01']) {
    const page = await admin(`query($a: String) { vendorReconciliations(first: 5, after: $a) { edges { cursor } } }`, {
      a: after,
    });
    expect({ after, ...refusal(page) }).toEqual({
      after,
      status: 400,
      code: 'BAD_USER_INPUT',
      message: 'after: is not a cursor of this list',
    });
  }
  const { projectId: eachUser } = await projectWithKey(gw);
  const set = await admin(
    `mutation($p: ID!) { setBudget(projectId: $p, unit: USD, limit: "5", period: MONTHLY, hard: true, scope: EACH_USER) }`,
    { p: eachUser },
  );
  expect(set.body.errors).toBeUndefined();
  for (const after of ['AA', 'AAB4', Buffer.from('u'.repeat(200)).toString('base64url')]) {
    // "AA" is a NUL byte; "AAB4" control characters; then a user longer than any
    const users = await admin(
      `query($p: ID!, $a: String) { budgetStatus(projectId: $p) { users(first: 5, after: $a) { edges { cursor } } } }`,
      { p: eachUser, a: after },
    );
    expect({ after, ...refusal(users) }).toEqual({
      after,
      status: 400,
      code: 'BAD_USER_INPUT',
      message: 'after: is not a cursor of this list',
    });
  }
});

test("a task filter's project id that is not a UUID is refused naming it, in tasks and taskTotals", async () => {
  for (const query of [
    `query($x: TaskFilterInput) { tasks(filter: $x) { edges { cursor } } }`,
    `query($x: TaskFilterInput) { taskTotals(filter: $x) { tasks } }`,
  ]) {
    for (const bad of ['nope', '']) {
      const res = await admin(query, { x: { projectIds: [projectId, bad] } });
      expect(refusal(res)).toEqual({
        status: 400,
        code: 'BAD_USER_INPUT',
        message: `filter.projectIds: "${bad}" is not an id (a UUID)`,
      });
    }
  }
});

test('text with a NUL character is refused naming where it is, whatever the field, and nothing is written', async () => {
  const before = await rowsWritten();
  const key = `mutation($p: ID!, $v: String) { setBudget(projectId: $p, unit: USD, limit: "5", period: MONTHLY, hard: true, scope: API_KEY, scopeValue: $v) }`;
  const limit = `mutation($p: ID!, $v: String) { setLimit(projectId: $p, kind: REQUESTS_PER_MINUTE, amount: 5, scope: API_KEY, scopeValue: $v) }`;
  const literal = `mutation($p: ID!) { setBudget(projectId: $p, unit: USD, limit: "5", period: MONTHLY, hard: true, scope: API_KEY, scopeValue: "a\\u0000b") }`;
  const nested = `query { taskTotals(filter: { tags: ["team=a", "a\\u0000b"] }) { tasks } }`;
  const answers = [
    [await admin(key, { p: projectId, v: NUL }), 'scopeValue'],
    [await admin(limit, { p: projectId, v: NUL }), 'scopeValue'],
    [await admin(literal, { p: projectId }), 'scopeValue'],
    [await admin(nested), 'filter.tags'],
    [await admin(`query { taskTotals(filter: { users: ["a\u0000b"] }) { tasks } }`), 'filter.users'], // the character itself
    [await admin(`query { taskTotals(filter: { models: ["a\\u{0}b"] }) { tasks } }`), 'filter.models'],
    [
      await admin(`query($x: TaskFilterInput) { tasks(filter: $x) { edges { cursor } } }`, {
        x: { users: ['u', NUL] },
      }),
      'filter.users[1]',
    ],
  ] as const;
  for (const [res, where] of answers) {
    expect({ http: res.status, ...refusal(res) }).toEqual({
      http: 400,
      status: 400,
      code: 'BAD_USER_INPUT',
      message: `${where}: text must not contain the NUL character (U+0000)`,
    });
  }
  expect(await rowsWritten()).toBe(before);
});

// ---- every root field with generated arguments ----

type Ref = IntrospectionTypeRef;
const named = (t: Ref): { kind: string; name: string } =>
  'ofType' in t && t.ofType ? named(t.ofType) : (t as { kind: string; name: string });
const declared = (t: Ref): string =>
  t.kind === 'NON_NULL' ? `${declared(t.ofType)}!` : t.kind === 'LIST' ? `[${declared(t.ofType)}]` : t.name;

const hostileText = fc.oneof(
  fc.constantFrom('', ' ', NUL, '😀', "'; drop table task; --", 'x'.repeat(5_000), '-1', 'NaN', '1e400', '2026-13-01'),
  fc.constantFrom('9999-12', '0000-01', '1970-01', '2026-11', 'team=a', 'gw-1', '99999999999999999999999'),
  fc.constantFrom('+275760-09-13T00:00:00Z', '-000001-01-01T00:00:00Z', '10000', 'AA', 'dGFzazox'),
  fc.string({ maxLength: 30 }),
);
const hostileDecimal = fc.constantFrom(
  '0',
  '-0',
  '-1',
  '0.5',
  `0.${'1'.repeat(40)}`,
  '9'.repeat(40),
  '1e3',
  'NaN',
  '',
  ' 1',
);
const hostileDate = fc.constantFrom(
  '1970-01-01T00:00:00Z',
  '0000-01-01T00:00:00+01:00',
  '9999-12-31T23:59:59.999Z',
  '9999-12-31T23:00:00-05:00',
  '9999-12-31T19:00:00-05:00',
  '2026-12-31T23:59:59.999Z',
  '2026-02-30T00:00:00Z',
  'yesterday',
);

test('every Query and Mutation field, with generated hostile arguments: never an internal error', async () => {
  const schema = (await admin(getIntrospectionQuery())).body.data as unknown as IntrospectionQuery;
  const types = new Map(schema.__schema.types.map((t) => [t.name, t]));
  const ids = () => fc.constantFrom(projectId, taskId, `gw-${taskId}`, '00000000-0000-0000-0000-000000000000');
  const value = (t: Ref, name: string, depth: number): fc.Arbitrary<unknown> => {
    if (t.kind === 'NON_NULL') return value(t.ofType, name, depth);
    if (t.kind === 'LIST') return fc.array(value(t.ofType, name, depth + 1), { maxLength: depth > 1 ? 1 : 3 });
    const type = types.get(t.name)!;
    if (type.kind === 'ENUM') return fc.constantFrom(...type.enumValues.map((v) => v.name));
    if (type.kind === 'INPUT_OBJECT') {
      if (depth > 2) return fc.constant({});
      const fields = Object.fromEntries(type.inputFields.map((f) => [f.name, value(f.type, f.name, depth + 1)]));
      const required = type.inputFields.filter((f) => f.type.kind === 'NON_NULL').map((f) => f.name);
      return fc.record(fields, { requiredKeys: required });
    }
    if (t.name === 'Int') return fc.constantFrom(0, -1, 1, 10, 2_147_483_647, -2_147_483_648);
    if (t.name === 'Boolean') return fc.boolean();
    if (t.name === 'Decimal') return hostileDecimal;
    if (t.name === 'DateTime') return hostileDate;
    if (t.name === 'ID' || /id$/i.test(name)) return fc.oneof(ids(), hostileText);
    return hostileText;
  };
  const roots = (['queryType', 'mutationType'] as const).flatMap((root) => {
    const type = types.get(schema.__schema[root]!.name)!;
    if (type.kind !== 'OBJECT') return [];
    return type.fields.map((field) => ({ operation: root === 'queryType' ? 'query' : 'mutation', field }));
  });
  const call = fc.constantFrom(...roots).chain(({ operation, field }) =>
    fc
      .record(Object.fromEntries(field.args.map((a) => [a.name, value(a.type, a.name, 0)])), {
        requiredKeys: field.args.filter((a) => a.type.kind === 'NON_NULL').map((a) => a.name),
      })
      .map((args) => ({ operation, field, args })),
  );
  const seed = Number(process.env.GRAPHQL_FUZZ_SEED ?? 20261202);
  await fc.assert(
    fc.asyncProperty(call, async ({ operation, field, args }) => {
      const decl = field.args.filter((a) => a.name in args).map((a) => `$${a.name}: ${declared(a.type)}`);
      const pass = Object.keys(args).map((k) => `${k}: $${k}`);
      const returned = types.get(named(field.type).name)!;
      const selection = returned.kind === 'OBJECT' || returned.kind === 'INTERFACE' ? '{ __typename }' : '';
      const query = `${operation}${decl.length ? `(${decl.join(', ')})` : ''} { ${field.name}${pass.length ? `(${pass.join(', ')})` : ''} ${selection} }`;
      const res = await admin(query, args as Record<string, unknown>);
      const internal = (res.body?.errors ?? []).filter(
        (e) => e.extensions?.code === 'INTERNAL_SERVER_ERROR' || Number(e.extensions?.status ?? 0) >= 500,
      );
      expect({ field: field.name, http: res.status < 500, json: res.body !== undefined, internal }).toEqual({
        field: field.name,
        http: true,
        json: true,
        internal: [],
      });
    }),
    { seed, numRuns: Number(process.env.GRAPHQL_FUZZ_RUNS ?? 600) },
  );
}, 240_000);
