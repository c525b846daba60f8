/**
 * spendReport's rows written as JSON directly (bench/FINDINGS.md; src/graphql/answered-directly.ts) answer
 * exactly what GraphQL's execution answers: two gateways on one database, one with
 * GRAPHQL_ANSWER_REPORTS_DIRECTLY=false, get the same queries twice each (interpreted, then
 * compiled) and every answer is the same status, content type and bytes. The queries cover every
 * field with aliases and __typename, groups in two units, names with quotes, backslashes and
 * characters outside ASCII, two reports in one query, a report beside another field, an error that
 * nulls the whole answer, the top N by amount, a GET, fragments, and no token at all.
 */
import type { Gateway } from '../../src/bootstrap.js';
import { Database } from '../../src/database/database.js';
import { ProjectsService } from '../../src/projects/projects.service.js';
import { ADMIN, eventually, gateway, http, sql } from '../support/harness.js';
import { reportsDatabase } from '../support/reports-data.js';

let direct: Gateway;
let executed: Gateway;
const TRICKY = 'Ünïcode "quoted" \\ back\\slash ✓ 🔥\u2028';

beforeAll(async () => {
  const url = await reportsDatabase(3000, 100);
  const db = new Database(url, 2);
  await db.query(`UPDATE project SET name = $1 WHERE name = 'project-07'`, [TRICKY]);
  await db.close();
  direct = await gateway(url);
  executed = await gateway(url, { GRAPHQL_ANSWER_REPORTS_DIRECTLY: 'false', POLLER_ENABLED: 'false' });
  // Spend by an API key whose name needs escaping, settled by the first gateway's poller.
  const project = (await sql(direct, `SELECT id FROM project WHERE name = $1`, [TRICKY]))[0]!.id as string;
  const key = await new ProjectsService(direct.db).issueKey(project, ['team="a\\b"'], { name: `search ${TRICKY}` });
  const res = await http(`${direct.url}/api-platform/v1/chat/completions`, {
    key,
    body: { model: 'gpt-5.6-luna', messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 },
  });
  expect(res.status).toBe(200);
  await eventually(
    async () =>
      (await sql(direct, `SELECT 1 FROM task WHERE api_key_id IS NOT NULL AND settled_at IS NOT NULL`)).length > 0,
    20_000,
  );
}, 180_000);

afterAll(async () => {
  await direct?.close();
  await executed?.close();
});

const today = new Date(new Date().toISOString().slice(0, 10) + 'T00:00:00Z');
const month = {
  f: new Date(today.getTime() - 30 * 86_400_000).toISOString(),
  t: new Date(today.getTime() + 86_400_000).toISOString(),
};
const ALL =
  'keys totals { unit amount } tasks unpricedTasks videoSeconds images tokens { input output cacheRead cacheWrite5m cacheWrite1h cacheWrite } apiKeyName';

// Three elements each: a row of two would make Jest take the test's third parameter for a done() callback.
const QUERIES: Array<[string, string, Record<string, unknown> | undefined]> = [
  [
    'every field, a month by project × model × day',
    `query($f: DateTime!, $t: DateTime!) { spendReport(from: $f, to: $t, groupBy: ["project", "model", "day"]) { ${ALL} } }`,
    month,
  ],
  [
    'aliases, __typename and another order, by project (groups in two units)',
    `query($f: DateTime!, $t: DateTime!) { __typename r: spendReport(from: $f, to: $t, groupBy: ["project"]) { __typename n: tasks totals { a: amount __typename unit } tokens { output __typename input } keys images } }`,
    month,
  ],
  [
    'two reports in one query',
    `query($f: DateTime!, $t: DateTime!) { a: spendReport(from: $f, to: $t, groupBy: ["model"]) { keys tasks } b: spendReport(from: $f, to: $t, groupBy: ["day"]) { keys totals { unit amount } } }`,
    month,
  ],
  [
    'a report beside another field',
    `query($f: DateTime!, $t: DateTime!) { tagNames(from: $f, to: $t) spendReport(from: $f, to: $t, groupBy: ["tag:team"]) { keys tasks } }`,
    month,
  ],
  [
    'an error elsewhere nulls the whole answer',
    `query($f: DateTime!, $t: DateTime!) { ok: spendReport(from: $f, to: $t, groupBy: ["model"]) { keys } bad: spendReport(from: $f, to: $t, groupBy: ["nope"]) { keys } }`,
    month,
  ],
  [
    'by API key, with its name',
    `query($f: DateTime!, $t: DateTime!) { spendReport(from: $f, to: $t, groupBy: ["apiKey", "project"]) { ${ALL} } }`,
    month,
  ],
  [
    'the top 5 by amount, inline arguments',
    `{ spendReport(from: "${month.f}", to: "${month.t}", groupBy: ["project", "model"], unit: USD, orderBy: AMOUNT_DESC, first: 5) { keys totals { amount } } }`,
    undefined,
  ],
  [
    'a fragment (answered by execution on both)',
    `query($f: DateTime!, $t: DateTime!) { spendReport(from: $f, to: $t, groupBy: ["model"]) { ...R } } fragment R on SpendRow { keys tasks }`,
    month,
  ],
];

async function ask(
  gw: Gateway,
  query: string,
  variables?: Record<string, unknown>,
  init: { key?: string; get?: boolean } = { key: ADMIN },
) {
  const res = init.get
    ? await fetch(`${gw.url}/graphql?query=${encodeURIComponent(query)}`, {
        headers: { authorization: `Bearer ${ADMIN}` },
      })
    : await fetch(`${gw.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(init.key ? { authorization: `Bearer ${init.key}` } : {}) },
        body: JSON.stringify({ query, variables }),
      });
  return { status: res.status, type: res.headers.get('content-type'), text: withoutBooks(await res.text()) };
}

/**
 * The answer's bytes without `extensions.books` (when its figures were computed, which differs by
 * instance and time: decisions §22), which stands last in the envelope; everything before it compared
 * byte for byte.
 */
function withoutBooks(text: string): string {
  const at = text.lastIndexOf(',"extensions":{"books":');
  if (at < 0) return text;
  expect(JSON.parse(text.slice(at + ',"extensions":'.length, -1)).books.computedAt).toMatch(/^\d{4}-/);
  return `${text.slice(0, at)}}`;
}

test.each(QUERIES)('the same bytes with and without direct answers: %s', async (_name, query, variables) => {
  const answers = [];
  for (let run = 0; run < 2; run++)
    answers.push(await ask(direct, query, variables), await ask(executed, query, variables));
  for (const answer of answers.slice(1)) expect(answer).toEqual(answers[0]);
  expect(answers[0]!.text.length).toBeGreaterThan(20);
});

test('the answers hold the data they should: rows in every report, the tricky names escaped, and the error case null', async () => {
  const [full, byKey, failing] = await Promise.all([
    ask(direct, QUERIES[0]![1], month),
    ask(direct, QUERIES[5]![1], month),
    ask(direct, QUERIES[4]![1], month),
  ]);
  const rows = JSON.parse(full.text).data.spendReport as Array<{ keys: string[] }>;
  expect(rows.length).toBeGreaterThan(500);
  expect(rows.some((r) => r.keys[0] === TRICKY)).toBe(true);
  const keyed = JSON.parse(byKey.text).data.spendReport as Array<{ apiKeyName: string | null }>;
  expect(keyed.some((r) => r.apiKeyName === `search ${TRICKY}`.trim())).toBe(true); // names are kept trimmed
  const failed = JSON.parse(failing.text);
  expect(failed.data).toBeNull();
  expect(failed.errors[0].message).toMatch(/groupBy/);
});

test('a large answer crosses from the reads worker as memory (src/reads/posted-answers.ts), the same bytes; a small one by the socket', async () => {
  const post = (gw: Gateway, query: string) =>
    fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` },
      body: JSON.stringify({ query, variables: month }),
    });
  const before = direct.reads.answersHandedOver;
  const large = await post(direct, QUERIES[0]![1]);
  const bytes = Buffer.from(await large.arrayBuffer());
  expect(bytes.length).toBeGreaterThan(64 * 1024);
  expect(direct.reads.answersHandedOver).toBe(before + 1);
  expect(Number(large.headers.get('content-length'))).toBe(bytes.length);
  expect([...large.headers.keys()].filter((name) => name.includes('posted'))).toEqual([]);
  const executedBytes = await (await post(executed, QUERIES[0]![1])).text();
  expect(withoutBooks(bytes.toString())).toBe(withoutBooks(executedBytes));
  expect(executed.reads.answersHandedOver).toBe(0); // answered by GraphQL's execution: nothing written to hand over
  const small = await post(direct, QUERIES[2]![1]);
  expect(small.status).toBe(200);
  expect((await small.text()).length).toBeLessThan(64 * 1024);
  expect(direct.reads.answersHandedOver).toBe(before + 1);
});

test('a GET and a request without a token answer the same bytes too', async () => {
  const query = `{ spendReport(from: "${month.f}", to: "${month.t}", groupBy: ["project"]) { keys totals { unit amount } } }`;
  const get = [
    await ask(direct, query, undefined, { get: true }),
    await ask(executed, query, undefined, { get: true }),
  ];
  expect(get[1]).toEqual(get[0]);
  expect(get[0]!.status).toBe(200);
  const anonymous = [await ask(direct, QUERIES[0]![1], month, {}), await ask(executed, QUERIES[0]![1], month, {})];
  expect(anonymous[1]).toEqual(anonymous[0]);
  expect(anonymous[0]!.status).toBe(401);
});
