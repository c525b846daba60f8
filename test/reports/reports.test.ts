/**
 * Finance over HTTP, as a new user would: project, key and budget through GraphQL; media and chat
 * tasks through the gateway; after settlement, budgetStatus, spendReport and the CSV agree to the
 * last decimal with the ledger; credits and USD never summed; a project key sees only its project.
 */
import fc from 'fast-check';
import { getIntrospectionQuery } from 'graphql';
import type { Gateway } from '../../src/bootstrap.js';
import { WARM_UP_QUERY } from '../../src/reads/warm-up.js';
import { sortedOrder } from '../../src/reports/report-order.js';
import { dec, Money } from '../../src/pricing/money.js';
import {
  ADMIN,
  freshDatabase,
  gateway,
  graphql,
  http,
  pollTask,
  sql,
  submitChat,
  submitGeneration,
  type GraphqlAnswer,
  type GraphqlData,
} from '../support/harness.js';

let gw: Gateway;
const projects: Record<'a' | 'b', { id: string; key: string }> = {} as never;
const today = new Date(new Date().toISOString().slice(0, 10) + 'T00:00:00Z');
const from = today.toISOString();
const to = new Date(today.getTime() + 86_400_000).toISOString();
let budgetId: string;
let bTaskId: number;

async function gql<T = GraphqlData>(
  token: string,
  query: string,
  variables?: Record<string, unknown>,
): Promise<GraphqlAnswer<T>> {
  const res = await graphql<T>(gw, token, query, variables);
  return res.body;
}

async function settle(key: string, taskId: number, status: 'ready' | 'failed', usage?: unknown) {
  await http(`${gw.simulatorUrl}/__sim/tasks/${taskId}/complete`, {
    body: usage === undefined ? { status } : { status, usage },
  });
  const res = await pollTask(gw, key, taskId);
  expect(res.body.data.status).toBe(status);
}

beforeAll(async () => {
  gw = await gateway(await freshDatabase(), { SIMULATOR_DELAY_MS: '600000', POLLER_ENABLED: 'false' });
  for (const name of ['a', 'b'] as const) {
    const created = await gql(ADMIN, 'mutation($n: String!) { createProject(name: $n) }', { n: `team-${name}` });
    const id = created.data.createProject;
    const key = (await gql(ADMIN, 'mutation($p: ID!) { issueApiKey(projectId: $p) }', { p: id })).data.issueApiKey;
    projects[name] = { id, key };
  }
  budgetId = (
    await gql(
      ADMIN,
      `mutation($p: ID!) { setBudget(projectId: $p, unit: USD, limit: "5.00", period: MONTHLY, hard: true) }`,
      { p: projects.a.id },
    )
  ).data.setBudget;

  const a = projects.a.key;
  const media = [
    { model: 'seedream-4.0', prompt: 'p', resolution: '2K', n: 7 }, // 0.42
    { model: 'veo-3.1', prompt: 'p', resolution: '4K', duration: 8 }, // 4.16
  ];
  for (const body of media) {
    const res = await submitGeneration(gw, a, body);
    await settle(a, res.body.data.taskId, 'ready');
  }
  const failed = await submitGeneration(gw, a, { model: 'nano-banana-pro', prompt: 'p' });
  await settle(a, failed.body.data.taskId, 'failed');
  const chat = await submitChat(gw, a, { model: 'gemini-3.8-flash', messages: [{ role: 'user', content: 'hi' }] });
  await settle(a, chat.body.data.taskId, 'ready', {
    promptTokenCount: 20_000,
    cachedContentTokenCount: 8_000,
    candidatesTokenCount: 1_500,
    thoughtsTokenCount: 2_500,
  }); // 31.9956
  const bChat = await submitChat(gw, projects.b.key, { model: 'glm-5.3', messages: [{ role: 'user', content: 'hi' }] });
  bTaskId = bChat.body.data.taskId;
  await settle(projects.b.key, bTaskId, 'ready', { prompt_tokens: 1_000, completion_tokens: 100 }); // 1.4 + 0.49 = 1.89
  // A refund of part of the veo charge: a new entry, the old one untouched.
  const refund = await gql(
    ADMIN,
    `mutation($p: ID!) { adjustLedger(projectId: $p, unit: USD, amount: "-0.16", reason: "goodwill credit") }`,
    { p: projects.a.id },
  );
  expect(refund.errors).toBeUndefined();
});
afterAll(() => gw.close());

const REPORT = `query($from: DateTime!, $to: DateTime!, $g: [String!], $p: [ID!]) {
  spendReport(from: $from, to: $to, groupBy: $g, projectIds: $p) {
    keys totals { unit amount } tasks unpricedTasks videoSeconds images
    tokens { input output cacheRead cacheWrite5m cacheWrite1h cacheWrite } } }`;

async function ledgerTotal(projectId: string, unit: string): Promise<string> {
  const [row] = await sql(
    gw,
    `SELECT coalesce(sum(amount), 0)::text AS t FROM ledger_entry WHERE project_id = $1 AND unit = $2 AND kind IN ('charge', 'adjustment')`,
    [projectId, unit],
  );
  return row.t;
}

test('spendReport totals equal the ledger, per unit, never summed across units', async () => {
  const body = await gql(ADMIN, REPORT, { from, to, g: ['project'] });
  expect(body.errors).toBeUndefined();
  const rows = body.data.spendReport as Array<{
    keys: string[];
    totals: Array<{ unit: string; amount: string }>;
    tasks: number;
  }>;
  const a = rows.find((r) => r.keys[0] === 'team-a')!;
  // USD: 0.42 + 4.16 − 0.16 = 4.42 ; CREDITS: 31.9956
  expect(a.totals).toEqual([
    { unit: 'CREDITS', amount: '31.9956' },
    { unit: 'USD', amount: '4.42' },
  ]);
  expect(a.tasks).toBe(4); // 2 media ready, 1 failed, 1 chat
  for (const t of a.totals) expect(dec(t.amount).eq(dec(await ledgerTotal(projects.a.id, t.unit)))).toBe(true);
  const b = rows.find((r) => r.keys[0] === 'team-b')!;
  expect(b.totals).toEqual([{ unit: 'CREDITS', amount: '1.89' }]);
});

test('token sums per class, video seconds and images, grouped by model', async () => {
  const body = await gql(ADMIN, REPORT, { from, to, g: ['model'], p: [projects.a.id] });
  const byModel = Object.fromEntries(body.data.spendReport.map((r) => [r.keys[0], r]));
  expect(byModel['gemini-3.8-flash'].tokens).toEqual({
    input: '12000',
    output: '4000',
    cacheRead: '8000',
    cacheWrite5m: '0',
    cacheWrite1h: '0',
    cacheWrite: '0',
  });
  expect(byModel['veo-3.1'].videoSeconds).toBe('8');
  expect(byModel['veo-3.1'].totals).toEqual([{ unit: 'USD', amount: '4.16' }]);
  // The refund was posted without a task: it has a row of its own, not hidden in a model.
  expect(byModel['(adjustment)'].totals).toEqual([{ unit: 'USD', amount: '-0.16' }]);
  expect(byModel['seedream-4.0'].images).toBe(7);
});

test('filters: statuses and kinds', async () => {
  const failed = await gql(
    ADMIN,
    `query($f: DateTime!, $t: DateTime!) { spendReport(from: $f, to: $t, statuses: ["failed"], groupBy: ["model"]) { keys tasks totals { unit amount } } }`,
    { f: from, t: to },
  );
  expect(failed.data.spendReport).toEqual([
    { keys: ['nano-banana-pro'], tasks: 1, totals: [{ unit: 'USD', amount: '0' }] },
  ]);
  const video = await gql(
    ADMIN,
    `query($f: DateTime!, $t: DateTime!) { spendReport(from: $f, to: $t, kinds: ["video"]) { keys totals { unit amount } } }`,
    { f: from, t: to },
  );
  expect(video.data.spendReport).toEqual([{ keys: [], totals: [{ unit: 'USD', amount: '4.16' }] }]);
});

test('by project × model × day: the per-row read of the outcome totals equals the sum over every outcome', async () => {
  // Without a status filter this report reads spend_rollup_total row by row (no GROUP BY); with all
  // three outcomes named it sums spend_rollup. Both must give the same figures, measure by measure.
  const perRow = await gql(ADMIN, REPORT, { from, to, g: ['project', 'model', 'day'] });
  const summed = await gql(
    ADMIN,
    REPORT.replace('projectIds: $p)', 'projectIds: $p, statuses: ["ready", "failed", "adjustment"])'),
    { from, to, g: ['project', 'model', 'day'] },
  );
  expect(perRow.errors).toBeUndefined();
  expect(summed.errors).toBeUndefined();
  expect(perRow.data.spendReport.length).toBe(6); // a: 4 models + the refund; b: 1 model
  expect(perRow.data.spendReport).toEqual(summed.data.spendReport);
  const drift = await sql(
    gw,
    `SELECT * FROM spend_rollup_total t FULL JOIN (
      SELECT day, project_id, model, unit, sum(amount) AS amount, sum(tasks) AS tasks, sum(input_tokens) AS input_tokens
      FROM spend_rollup GROUP BY 1, 2, 3, 4) r USING (day, project_id, model, unit)
    WHERE t.amount IS DISTINCT FROM r.amount OR t.tasks IS DISTINCT FROM r.tasks OR t.input_tokens IS DISTINCT FROM r.input_tokens`,
  );
  expect(drift).toEqual([]);
  await expect(sql(gw, 'DELETE FROM spend_rollup')).rejects.toThrow(/never deleted/);
});

test('a report scoped to projects names them; CSV filters narrow it like GraphQL', async () => {
  const scoped = await gql(ADMIN, REPORT, { from, to, g: ['project'], p: [projects.b.id] });
  expect(scoped.data.spendReport.map((r) => [r.keys, r.totals])).toEqual([
    [['team-b'], [{ unit: 'CREDITS', amount: '1.89' }]],
  ]);
  // team-a's Veo job only: 8 s of video, USD 4.16.
  const csv = await http(
    `${gw.url}/reports/spend.csv?from=${from}&to=${to}&groupBy=project&projectIds=${projects.a.id}&models=veo-3.1&kinds=video`,
    { key: ADMIN },
  );
  expect(csv.status).toBe(200);
  const [, ...lines] = csv.text.trim().split('\n');
  expect(lines.map((l) => l.split(',').slice(0, 3).join(','))).toEqual(['team-a,USD,4.16']);
});

test('the CSV matches the GraphQL report to the last decimal', async () => {
  const res = await http(`${gw.url}/reports/spend.csv?from=${from}&to=${to}&groupBy=project,model`, { key: ADMIN });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/text\/csv/);
  const [header, ...lines] = res.text.trim().split('\n');
  expect(header).toBe(
    'project,model,unit,amount,tasks,unpriced_tasks,input_tokens,output_tokens,cache_read_tokens,cache_write_5m_tokens,cache_write_1h_tokens,cache_write_tokens,video_seconds,images',
  );
  const gqlRows = (await gql(ADMIN, REPORT, { from, to, g: ['project', 'model'] })).data.spendReport;
  const fromGraphql = gqlRows.flatMap((r) => r.totals.map((t) => `${r.keys.join(',')},${t.unit},${t.amount}`)).sort();
  const fromCsv = lines.map((l) => l.split(',').slice(0, 4).join(',')).sort();
  expect(fromCsv).toEqual(fromGraphql);
  const csvTotal = Money.total(
    'USD',
    lines.filter((l) => l.includes(',USD,')).map((l) => Money.of('USD', l.split(',')[3]!)),
  ).amount;
  expect(csvTotal.toFixed()).toBe('4.42');
});

test('budgetStatus agrees with the ledger and shows use, window and projection', async () => {
  const body = await gql(
    projects.a.key,
    `query($p: ID!) { budgetStatus(projectId: $p) { budgetId limit spent held remaining percentUsed projectedSpend periodStart periodEnd } }`,
    { p: projects.a.id },
  );
  const [status] = body.data.budgetStatus;
  expect(status).toMatchObject({
    budgetId,
    limit: '5',
    spent: '4.42',
    held: '0',
    remaining: '0.58',
    percentUsed: '88.40',
  });
  expect(dec(status!.projectedSpend!).gte(dec('4.42'))).toBe(true);
  expect(status!.spent).toBe(await ledgerTotal(projects.a.id, 'USD'));
});

test('dashboard: today and month to date per unit, top models, budgets above 80 %', async () => {
  const body = await gql(
    ADMIN,
    `{ dashboard { today { unit amount } monthToDate { unit amount } topModels { key unit amount } topProjects { key unit amount } budgetsAbove80 { budgetId percentUsed used } } }`,
  );
  const d = body.data.dashboard;
  expect(d.today).toEqual([
    { unit: 'CREDITS', amount: '33.8856' },
    { unit: 'USD', amount: '4.42' },
  ]); // 31.9956 + 1.89
  expect(d.topModels.find((m) => m.unit === 'USD')!.key).toBe('veo-3.1');
  expect(d.topProjects.filter((p) => p.unit === 'CREDITS').map((p) => p.key)).toEqual(['team-a', 'team-b']);
  expect(d.budgetsAbove80).toEqual([{ budgetId, percentUsed: '88.40', used: '4.42' }]);
});

test('tasks: cursor pagination with estimate, charge lines and ledger entries', async () => {
  const page = `query($after: String) { tasks(first: 2, after: $after) { edges { cursor node { taskId model status charge { amount lines { component } } ledgerEntries { kind amount } } } pageInfo { hasNextPage endCursor } } }`;
  const first = (await gql(ADMIN, page)).data.tasks;
  expect(first.edges).toHaveLength(2);
  expect(first.pageInfo.hasNextPage).toBe(true);
  const second = (await gql(ADMIN, page, { after: first.pageInfo.endCursor })).data.tasks;
  const third = (await gql(ADMIN, page, { after: second.pageInfo.endCursor })).data.tasks;
  const ids = [...first.edges, ...second.edges, ...third.edges].map((e) => e.node.taskId);
  expect(new Set(ids).size).toBe(5);
  expect(third.pageInfo.hasNextPage).toBe(false);
  const own = (await gql(projects.b.key, '{ tasks { edges { node { taskId ledgerEntries { kind amount } } } } }')).data
    .tasks.edges;
  expect(own).toEqual([
    { node: { taskId: String(bTaskId), ledgerEntries: expect.arrayContaining([{ kind: 'charge', amount: '1.89' }]) } },
  ]);
  const tooMany = await gql(ADMIN, '{ tasks(first: 201) { edges { cursor } } }');
  expect(tooMany.errors?.[0].message).toMatch(/first: must be between 1 and 200/);
});

describe('a project key reads its own project only', () => {
  test('spendReport, budgetStatus, task, CSV of another project are refused or empty', async () => {
    const key = projects.a.key;
    const report = await gql(key, REPORT, { from, to, p: [projects.b.id] });
    expect(report.errors?.[0].message).toMatch(/only read its own project/);
    const own = await gql(key, REPORT, { from, to, g: ['project'] });
    expect(own.data.spendReport.map((r) => r.keys[0])).toEqual(['team-a']);
    const budget = await gql(key, `query($p: ID!) { budgetStatus(projectId: $p) { budgetId } }`, { p: projects.b.id });
    expect(budget.errors?.[0].message).toMatch(/only read its own project/);
    const task = await gql(key, `query($t: ID!) { task(taskId: $t) { taskId } }`, { t: String(bTaskId) });
    expect(task.data.task).toBeNull();
    const csv = await http(`${gw.url}/reports/spend.csv?from=${from}&to=${to}&projectIds=${projects.b.id}`, { key });
    expect(csv.status).toBe(403);
    expect(csv.body).toEqual({ code: 4030, message: 'projectIds: this API key can only read its own project' });
    const mutation = await gql(
      key,
      `mutation($p: ID!) { setBudget(projectId: $p, unit: USD, limit: "1", period: DAILY, hard: true) }`,
      { p: projects.a.id },
    );
    expect(mutation.errors?.[0].message).toMatch(/setBudget needs the ADMIN_TOKEN/);
  });

  test("another project's budget, report, CSV and task look exactly like a project that does not exist", async () => {
    const key = projects.a.key;
    const other = projects.b.id;
    const missing = '3f6c2a9e-8d1b-4c7e-9a20-5b4d3c2e1f00';
    const same = (a: unknown, b: unknown) =>
      expect(JSON.stringify(a).replaceAll(other, 'ID')).toBe(JSON.stringify(b).replaceAll(missing, 'ID'));
    const budget = (p: string) => gql(key, `query($p: ID!) { budgetStatus(projectId: $p) { budgetId } }`, { p });
    expect((await budget(other)).errors?.[0]?.extensions).toEqual({ code: 'FORBIDDEN', status: 403 });
    same(await budget(other), await budget(missing));
    const report = (p: string) => gql(key, REPORT, { from, to, p: [p] });
    same(await report(other), await report(missing));
    const csv = async (p: string) => {
      const res = await http(`${gw.url}/reports/spend.csv?from=${from}&to=${to}&projectIds=${p}`, { key });
      return { status: res.status, body: res.body };
    };
    expect((await csv(other)).status).toBe(403);
    same(await csv(other), await csv(missing));
    const task = (t: string) => gql(key, `query($t: ID!) { task(taskId: $t) { taskId } }`, { t });
    expect(await task(String(bTaskId))).toEqual(await task('999999999'));
  });

  test('no token or a wrong one is refused and says why', async () => {
    const none = await http<GraphqlAnswer<GraphqlData>>(`${gw.url}/graphql`, {
      body: { query: '{ projects { id } }' },
    });
    expect(none.body.errors?.[0]?.message).toMatch(/send Authorization: Bearer/);
    const csv = await http(`${gw.url}/reports/spend.csv?from=${from}&to=${to}`);
    expect(csv.status).toBe(401);
  });
});

describe('safety and clear errors', () => {
  test('a query selecting too many fields is refused', async () => {
    const fields = Array.from({ length: 1001 }, (_, i) => `a${i}: id`).join(' ');
    const body = await gql(ADMIN, `{ projects { ${fields} } }`);
    expect(body.errors?.[0].message).toMatch(/more than 1000 fields/);
  });

  test('introspection nests up to 20 levels (the standard query GraphiQL sends is 15), not deeper', async () => {
    // Introspection nests without end (__Type.ofType is a __Type), so it reaches any depth:
    // __schema, queryType, k × ofType, name = k + 3 levels.
    const nested = (depth: number) =>
      `{ __schema { queryType { ${'ofType { '.repeat(depth - 3)}name${' }'.repeat(depth - 3)} } } }`;
    const twenty = await gql(ADMIN, nested(20));
    expect(twenty).toEqual({ data: { __schema: { queryType: { ofType: null } } } });
    const deeper = await gql(ADMIN, nested(21));
    expect(deeper).toMatchObject({
      data: null,
      errors: [
        { message: expect.stringMatching(/query depth \(21\) exceeds the query depth limit of 20 for introspection/) },
      ],
    });
    // Regression: the standard introspection query (depth 15) was refused by a depth limit of 10, so GraphiQL had no
    // schema.
    const standard = await gql(ADMIN, getIntrospectionQuery());
    expect(standard.errors).toBeUndefined();
    expect(standard.data.__schema.queryType).toMatchObject({ name: 'Query' });
  });

  test("the reads worker's start-up warm-up query is valid (a broken one would fail silently and the first page load would be slow again)", async () => {
    const body = await gql(ADMIN, WARM_UP_QUERY);
    expect(body.errors).toBeUndefined();
    expect(body.data).toMatchObject({ viewer: { admin: true }, totals: [], series: [], top: [], tagNames: [] });
  });

  test('tagNames lists the tag names of a range; a bad project id is a clear refusal', async () => {
    const names = await gql(ADMIN, `query($f: DateTime!, $t: DateTime!) { tagNames(from: $f, to: $t) }`, {
      f: from,
      t: to,
    });
    expect(names.errors).toBeUndefined();
    expect(Array.isArray(names.data.tagNames)).toBe(true);
    const bad = await gql(
      ADMIN,
      `query($f: DateTime!, $t: DateTime!) { tagNames(from: $f, to: $t, projectIds: ["nope"]) }`,
      { f: from, t: to },
    );
    expect(bad.errors?.[0].message).toMatch(/^projectIds/);
    const backwards = await gql(ADMIN, `query($f: DateTime!, $t: DateTime!) { tagNames(from: $f, to: $t) }`, {
      f: to,
      t: from,
    });
    expect(backwards.errors?.[0].message).toBe('to: must be after from');
  });

  test('report arguments are checked and named', async () => {
    const notMidnight = await gql(ADMIN, REPORT, { from: new Date(today.getTime() + 3_600_000).toISOString(), to });
    expect(notMidnight.errors?.[0].message).toMatch(/^from: must be a UTC midnight/);
    const badGroup = await gql(ADMIN, REPORT, { from, to, g: ['color'] });
    expect(badGroup.errors?.[0].message).toMatch(
      /groupBy: "color" is not one of project, model, family, kind, day, week, month/,
    );
    const floatDecimal = await gql(
      ADMIN,
      `mutation($p: ID!) { setBudget(projectId: $p, unit: USD, limit: 1.5, period: DAILY, hard: true) }`,
      { p: projects.a.id },
    );
    expect(floatDecimal.errors?.[0].message).toMatch(/Decimal values are written as strings/);
  });

  test('priceBook shows a version with its exact rates', async () => {
    const body = await gql(
      ADMIN,
      `{ priceBook(version: 1) { version rates { model component key tier tierMaxInput rate } } }`,
    );
    expect(body.data.priceBook!.rates).toContainEqual({
      model: 'gpt-5.6-sol',
      component: 'token',
      key: 'input',
      tier: 'long',
      tierMaxInput: null,
      rate: '7389.2',
    });
    expect(body.data.priceBook!.rates).toContainEqual({
      model: 'sora-2-pro',
      component: 'request',
      key: '15',
      tier: null,
      tierMaxInput: null,
      rate: '0.72',
    });
  });
});

describe('report row order', () => {
  const byText = (columns: string[][], n: number) =>
    Array.from({ length: n }, (_, i) => i).sort((a, b) => {
      for (const c of columns) if (c[a] !== c[b]) return c[a]! < c[b]! ? -1 : 1;
      return 0;
    });

  test('sortedOrder equals comparing the key texts column by column (counting, numeric and text paths)', () => {
    // Few distinct values (the counting sort), many (one number per row), and so many that no
    // single number holds them (the text comparison).
    for (const distinct of [3, 5_000, 2 ** 40]) {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 8 }),
          fc.integer({ min: 0, max: 300 }),
          fc.integer(),
          (width, rows, seed) => {
            let x = seed >>> 0;
            const next = () => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) % distinct).toString(36);
            // Rows unique on their keys, as grouped rows are.
            const seen = new Set<string>();
            const table: string[][] = [];
            for (let r = 0; r < rows; r++) {
              const row = Array.from({ length: width }, next);
              if (!seen.has(row.join('\u0000'))) {
                seen.add(row.join('\u0000'));
                table.push(row);
              }
            }
            const columns = Array.from({ length: width }, (_, c) => table.map((row) => row[c]!));
            expect(sortedOrder(columns, table.length)).toEqual(byText(columns, table.length));
          },
        ),
        { numRuns: 60 },
      );
    }
  });
});
