/**
 * Queries are compiled by graphql-jit from their second run (bench/FINDINGS.md: reports at the speed of
 * the roll-ups). The compiled run must answer exactly as the first, interpreted one:
 * - an inline Decimal literal (`limit: "5"`, written in the query rather than as a variable)
 *   means the same on every run, for every argument that takes one (the defect that once turned
 *   the JIT off: the compiled query handed the resolver JSON of a decimal.js object);
 * - a bad inline literal is refused the same way every time, and writes nothing;
 * - a report's answer is byte-identical on its first, second and later runs, and the schema keeps
 *   no per-field property readers (which would keep the compiler from inlining them).
 */
import type { Gateway } from '../../src/bootstrap.js';
import { heldTask } from '../support/builders.js';
import { ADMIN, freshDatabase, gateway, graphql, projectWithKey, sql, submitGeneration } from '../support/harness.js';

let gw: Gateway;
beforeAll(async () => {
  gw = await gateway(await freshDatabase(), { SIMULATOR_DELAY_MS: '0' });
});
afterAll(() => gw.close());

/** The same query text three times: the first run interpreted, the next ones compiled. */
async function thrice(query: string, variables?: Record<string, unknown>) {
  const out = [];
  for (let i = 0; i < 3; i++) {
    const res = await graphql(gw, ADMIN, query, variables);
    expect(res.body.errors).toBeUndefined();
    expect(res.status).toBe(200);
    out.push(res.body.data);
  }
  return out;
}

test('setBudget and updateBudget with an inline limit keep it exactly, compiled or not', async () => {
  const { projectId } = await projectWithKey(gw);
  const set = `mutation($p: ID!) { setBudget(projectId: $p, unit: USD, limit: "5.25", period: MONTHLY, hard: true) }`;
  const [first] = await thrice(set, { p: projectId });
  const limit = async () =>
    (await sql(gw, `SELECT "limit"::text AS l FROM budget WHERE id = $1`, [first!.setBudget]))[0]!.l;
  expect(await limit()).toBe('5.25');
  await thrice(`mutation($b: ID!) { updateBudget(budgetId: $b, limit: "7.000001") }`, { b: first!.setBudget });
  expect(await limit()).toBe('7.000001');
});

test('adjustLedger with an inline amount below 1e-7 posts that amount on every run (no exponent form)', async () => {
  const { projectId } = await projectWithKey(gw);
  await thrice(
    `mutation($p: ID!) { adjustLedger(projectId: $p, unit: USD, amount: "0.00000001", reason: "rounding credit") }`,
    { p: projectId },
  );
  const amounts = await sql(
    gw,
    `SELECT amount::text AS a FROM ledger_entry WHERE project_id = $1 AND kind = 'adjustment' ORDER BY id`,
    [projectId],
  );
  expect(amounts.map((r) => r.a)).toEqual(['0.00000001', '0.00000001', '0.00000001']);
});

test('setProjectPolicies with an inline chatHoldMultiplier, and resolveTask with an inline amount', async () => {
  const { projectId } = await projectWithKey(gw);
  const [policy] = await thrice(`mutation($p: ID!) { setProjectPolicies(projectId: $p, chatHoldMultiplier: "1.5") }`, {
    p: projectId,
  });
  expect(policy).toBeDefined();
  const multiplier = await sql(gw, `SELECT chat_hold_multiplier::text AS m FROM project WHERE id = $1`, [projectId]);
  expect(multiplier[0]!.m).toBe('1.5');

  const charged: string[] = [];
  for (let i = 0; i < 3; i++) {
    const held = await heldTask(gw, { projectId });
    await sql(gw, `UPDATE task SET status = 'unknown', needs_review = true WHERE id = $1`, [held.taskId]);
    const res = await graphql(
      gw,
      ADMIN,
      `
        mutation ($t: ID!) {
          resolveTask(taskId: $t, outcome: CHARGE, amount: "0.0125", reason: "agreed") {
            net
          }
        }
      `,
      { t: `gw-${held.taskId}` },
    );
    expect(res.body.errors).toBeUndefined();
    charged.push(String(res.body.data.resolveTask.net));
  }
  expect(charged).toEqual(['0.0125', '0.0125', '0.0125']);
});

test('a bad inline Decimal is refused as bad input on every run, and writes nothing', async () => {
  const { projectId } = await projectWithKey(gw);
  for (const literal of ['"1e5"', '"12.5.1"', '1.5', `"${'9'.repeat(40)}"`]) {
    for (let i = 0; i < 3; i++) {
      const res = await graphql(
        gw,
        ADMIN,
        `mutation($p: ID!) { setBudget(projectId: $p, unit: USD, limit: ${literal}, period: MONTHLY, hard: true) }`,
        { p: projectId },
      );
      expect([literal, i, res.status]).toEqual([literal, i, 400]);
      expect(res.body.data ?? null).toBeNull();
      expect(res.body.errors?.[0]?.message).toMatch(/decimal|Decimal|digits/);
    }
  }
  expect(await sql(gw, `SELECT id FROM budget WHERE project_id = $1`, [projectId])).toEqual([]);
});

test('a report answers byte for byte the same interpreted and compiled, with inline dates and fragments', async () => {
  const { key } = await projectWithKey(gw);
  for (let i = 0; i < 6; i++) await submitGeneration(gw, key, { model: 'seedream-4.0', prompt: `r${i}` });
  const now = new Date();
  const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString();
  const to = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
  const query = `fragment m on SpendRow { videoSeconds images tokens { input output cacheRead } }
    { spendReport(from: "${from}", to: "${to}", groupBy: ["project", "model", "day"]) { keys totals { unit amount } tasks unpricedTasks ...m } }`;
  const answers: string[] = [];
  for (let i = 0; i < 4; i++) answers.push((await graphql(gw, ADMIN, query)).text);
  expect(JSON.parse(answers[0]!).data.spendReport.length).toBeGreaterThan(0);
  expect(new Set(answers).size).toBe(1);
});

test('the schema keeps no generated property readers: plain fields are read by GraphQL itself', async () => {
  const { withPlainFieldReads } = await import('../../src/graphql/plain-fields.js');
  const { GraphQLObjectType, GraphQLSchema, GraphQLString } = await import('graphql');
  // The transform removes exactly Nest's readers and leaves written resolvers alone.
  const rootFieldResolver = (root: Record<string, unknown>) => root.a;
  const written = () => 'written';
  const schema = withPlainFieldReads(
    new GraphQLSchema({
      query: new GraphQLObjectType({
        name: 'Query',
        fields: {
          a: { type: GraphQLString, resolve: rootFieldResolver },
          b: { type: GraphQLString, resolve: written },
        },
      }),
    }),
  );
  expect(schema.getQueryType()!.getFields().a!.resolve).toBeUndefined();
  expect(schema.getQueryType()!.getFields().b!.resolve).toBe(written);
  // The transform knows Nest's readers by their name: an upgrade that renames them fails here, not silently.
  const { readFileSync } = await import('node:fs');
  const { createRequire } = await import('node:module');
  const factory = createRequire(import.meta.url).resolve(
    '@nestjs/graphql/dist/schema-builder/factories/object-type-definition.factory.js',
  );
  expect(readFileSync(factory, 'utf8')).toContain('const rootFieldResolver = (root) =>');
});
