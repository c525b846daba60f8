/**
 * Cached report answers (decisions §22), through two gateways on one database and their real HTTP
 * and GraphQL edges: an answer repeats from memory until the books it covers change anywhere; many
 * callers at once compute it once; what a caller may see is part of its key; ETags answer 304; a
 * closed month's answer is final until the month is reopened; and, while adjustments, settlements and
 * a close and reopen run on both instances, no answer is ever staler than the books stamp it claims.
 */
import { Decimal } from 'decimal.js';
import type { Gateway } from '../../src/bootstrap.js';
import { LedgerService } from '../../src/ledger/ledger.service.js';
import { heldTask } from '../support/builders.js';
import {
  ADMIN,
  eventually,
  freshDatabase,
  gateway,
  graphql,
  http,
  projectWithKey,
  sql,
  submitChat,
} from '../support/harness.js';

let a: Gateway;
let b: Gateway;
let url: string;
let p: { projectId: string; key: string };
let q: { projectId: string; key: string };

const now = new Date();
const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
const nextMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
const lastMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1));
const MONTH = { f: monthStart.toISOString(), t: nextMonth.toISOString() };
const REPORT = `query($f: DateTime!, $t: DateTime!, $p: [ID!]) {
  spendReport(from: $f, to: $t, projectIds: $p, groupBy: ["project"]) { keys tasks totals { unit amount } } }`;
const CHAT = { model: 'gpt-5.6-luna', messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 };

interface Books {
  computedAt: string;
  versions: Record<string, string>;
}
const fromMemory = (res: { headers: Headers }) => res.headers.get('x-spendgate-cache') === 'hit';
type Report = Array<{ keys: string[]; tasks: number; totals: Array<{ unit: string; amount: string }> }>;

async function report(gw: Gateway, projectIds: string[] | null = null, token = ADMIN, headers = {}) {
  const res = await http<{ data: { spendReport: Report }; extensions?: { books: Books } }>(`${gw.url}/graphql`, {
    key: token,
    body: { query: REPORT, variables: { ...MONTH, p: projectIds } },
    headers,
  });
  return res;
}

async function settleOne(gw: Gateway, key: string): Promise<void> {
  const before = Number((await sql(gw, `SELECT count(*)::int AS n FROM task WHERE settled_at IS NOT NULL`))[0]!.n);
  expect((await submitChat(gw, key, CHAT)).status).toBe(200);
  await eventually(
    async () =>
      Number((await sql(gw, `SELECT count(*)::int AS n FROM task WHERE settled_at IS NOT NULL`))[0]!.n) > before,
    20_000,
  );
}

/** A task of `projectId` held and settled by `gw`'s own ledger service: a settlement on that instance. */
async function settleOn(gw: Gateway, projectId: string, amount = '0.04', acceptedAt?: Date): Promise<void> {
  const task = await heldTask(gw, { projectId, ...(acceptedAt ? { acceptedAt } : {}) });
  const charge = {
    unit: 'USD' as const,
    exactness: 'EXACT' as const,
    amount: new Decimal(amount),
    lines: [],
    warnings: [],
  };
  await gw.app
    .get(LedgerService)
    .settle({ taskId: task.taskId, status: 'ready', charge: { ...charge, needsReview: false }, usage: {}, rollup: {} });
}

async function adjust(gw: Gateway, projectId: string, amount: string): Promise<void> {
  const res = await graphql(
    gw,
    ADMIN,
    `
      mutation ($p: ID!, $a: Decimal!) {
        adjustLedger(projectId: $p, unit: USD, amount: $a, reason: "test")
      }
    `,
    {
      p: projectId,
      a: amount,
    },
  );
  expect(res.body.errors).toBeUndefined();
}

beforeAll(async () => {
  url = await freshDatabase();
  a = await gateway(url);
  b = await gateway(url, { POLLER_ENABLED: 'false' });
  p = await projectWithKey(a, 'cached-p');
  q = await projectWithKey(a, 'cached-q');
  await settleOne(a, p.key);
  // Last month's activity, settled while it is open: 0.04 USD posted in it.
  await settleOn(a, p.projectId, '0.04', new Date(lastMonth.getTime() + 2 * 86_400_000));
}, 120_000);

afterAll(async () => {
  await a?.close();
  await b?.close();
});

test('a repeated report comes from memory until a settlement on the other instance moves its books; then both see it', async () => {
  const first = await report(a, [p.projectId]);
  expect(first.status).toBe(200);
  const second = await report(a, [p.projectId]);
  expect(fromMemory(second)).toBe(true);
  expect(second.body.extensions!.books.computedAt).toBe(first.body.extensions!.books.computedAt);
  expect(second.body.data).toEqual(first.body.data);
  // A settlement lands on b: a's next answer is computed again.
  const tasks = first.body.data.spendReport[0]!.tasks;
  await settleOn(b, p.projectId);
  for (const gw of [a, b]) {
    const after = await report(gw, [p.projectId]);
    expect(fromMemory(after)).toBe(false);
    expect(after.body.data.spendReport[0]!.tasks).toBe(tasks + 1);
    expect(after.body.extensions!.books.versions.spendReport).not.toBe(
      first.body.extensions!.books.versions.spendReport,
    );
  }
  // Spend in another project leaves this one's answer as it was.
  await settleOne(a, q.key);
  expect(fromMemory(await report(a, [p.projectId]))).toBe(true);
}, 90_000);

test('an ETag: the same answer again is a 304 with no body, through the main thread; a change makes a new one', async () => {
  const first = await report(a, [p.projectId]);
  const etag = first.headers.get('etag')!;
  expect(etag).toMatch(/^"g[\w-]{32}"$/);
  expect(first.headers.get('cache-control')).toBe('private, no-cache');
  const again = await report(a, [p.projectId], ADMIN, { 'if-none-match': etag });
  expect(again.status).toBe(304);
  expect(again.text).toBe('');
  await adjust(b, p.projectId, '0.5');
  const changed = await report(a, [p.projectId], ADMIN, { 'if-none-match': etag });
  expect(changed.status).toBe(200);
  expect(changed.headers.get('etag')).not.toBe(etag);
}, 60_000);

test('twenty callers at once: one computation, nineteen wait for it', async () => {
  await adjust(b, p.projectId, '0.25'); // a new stamp: nothing in memory answers it
  const answers = await Promise.all(Array.from({ length: 20 }, () => report(a, [p.projectId])));
  const computed = answers.filter((r) => !fromMemory(r));
  expect(computed).toHaveLength(1);
  for (const r of answers) expect(r.body.data).toEqual(computed[0]!.body.data);
}, 60_000);

test('what a caller may see decides the answer: a project key gets its own project, never the answer an admin was given', async () => {
  const all = await report(a);
  expect(all.body.data.spendReport.map((r) => r.keys[0]).sort()).toEqual(['cached-p', 'cached-q']);
  const own = await report(a, null, q.key);
  expect(own.body.data.spendReport.map((r) => r.keys[0])).toEqual(['cached-q']);
  // Its project's rows are the same whoever asks: kept once, shared with the admin's answer.
  expect(fromMemory(own)).toBe(true);
  expect(own.headers.get('etag')).not.toBe(all.headers.get('etag'));
}, 30_000);

test('the spend CSV and the FOCUS export carry ETags and answer 304; another instance computes the same bytes', async () => {
  for (const path of [
    `/reports/spend.csv?from=${MONTH.f}&to=${MONTH.t}&groupBy=project`,
    `/reports/focus.csv?from=${MONTH.f}&to=${MONTH.t}`,
  ]) {
    const first = await http(`${a.url}${path}`, { key: ADMIN });
    expect(first.status).toBe(200);
    expect(first.headers.get('cache-control')).toBe('private, no-cache');
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^"[\w-]{32}"$/);
    expect(first.headers.get('x-spendgate-computed-at')).toMatch(/^\d{4}-\d\d-\d\dT/);
    const again = await http(`${a.url}${path}`, { key: ADMIN, headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    // The other instance computes the same bytes: the same ETag.
    expect((await http(`${b.url}${path}`, { key: ADMIN })).headers.get('etag')).toBe(etag);
  }
}, 60_000);

test('a closed month is final (immutable) until it is reopened; adjustments after the reopen are seen on both instances', async () => {
  const label = lastMonth.toISOString().slice(0, 7);
  const range = { f: lastMonth.toISOString(), t: monthStart.toISOString() };
  const read = (gw: Gateway) =>
    http<{ data: { spendReport: Report }; extensions?: { books: Books } }>(`${gw.url}/graphql`, {
      key: ADMIN,
      body: { query: REPORT, variables: { ...range, p: [p.projectId] } },
    });
  const close = await graphql(
    a,
    ADMIN,
    `
      mutation ($m: String!) {
        closeMonth(month: $m) {
          month
        }
      }
    `,
    { m: label },
  );
  expect(close.body.errors).toBeUndefined();
  const closed = await read(a);
  expect(closed.headers.get('cache-control')).toBe('private, immutable');
  expect(closed.body.data.spendReport[0]!.totals).toEqual([{ unit: 'USD', amount: '0.04' }]);
  // Its statement: a kept file, final, with an ETag that answers 304.
  const statement = `${a.url}/reports/statements/${p.projectId}/${label}.csv`;
  const file = await http(statement, { key: ADMIN });
  expect(file.status).toBe(200);
  expect(file.headers.get('cache-control')).toBe('private, immutable');
  const held = await http(statement, { key: ADMIN, headers: { 'if-none-match': file.headers.get('etag')! } });
  expect(held.status).toBe(304);
  const reopen = await graphql(
    b,
    ADMIN,
    `
      mutation ($m: String!) {
        reopenMonth(month: $m, reason: "late invoice")
      }
    `,
    {
      m: label,
    },
  );
  expect(reopen.body.errors).toBeUndefined();
  expect((await read(a)).headers.get('cache-control')).toBe('private, no-cache');
  const effectiveAt = new Date(lastMonth.getTime() + 86_400_000).toISOString();
  const res = await graphql(
    b,
    ADMIN,
    `
      mutation ($p: ID!, $e: DateTime!) {
        adjustLedger(projectId: $p, unit: USD, amount: "7", reason: "late", effectiveAt: $e)
      }
    `,
    { p: p.projectId, e: effectiveAt },
  );
  expect(res.body.errors).toBeUndefined();
  for (const gw of [a, b]) {
    const after = await read(gw);
    const usd = after.body.data.spendReport[0]?.totals.find((t) => t.unit === 'USD')?.amount;
    expect(usd).toBe('7.04');
    expect(fromMemory(after)).toBe(false);
  }
}, 60_000);

test('a report by project is kept project by project: cold, then after one project changes, the same bytes as computed whole', async () => {
  const uncached = await gateway(url, { POLLER_ENABLED: 'false', REPORT_CACHE_MB: '0' });
  try {
    for (let i = 0; i < 6; i++) {
      const extra = await projectWithKey(a, `cached-extra-${i}`);
      await adjust(b, extra.projectId, `${i + 1}.5`);
    }
    const query = `query($f: DateTime!, $t: DateTime!) { spendReport(from: $f, to: $t, groupBy: ["project", "model", "day"]) {
      keys tasks unpricedTasks totals { unit amount } tokens { input output } videoSeconds images } }`;
    const ask = (gw: Gateway) => http(`${gw.url}/graphql`, { key: ADMIN, body: { query, variables: MONTH } });
    const same = async () => {
      const kept = await ask(a);
      const whole = await ask(uncached);
      expect(whole.text).not.toContain('"extensions"');
      expect(kept.text.startsWith(whole.text.slice(0, -1) + ',"extensions":')).toBe(true);
      return fromMemory(kept);
    };
    expect(await same()).toBe(false);
    expect(await same()).toBe(true);
    await adjust(b, p.projectId, '-0.125');
    expect(await same()).toBe(false);
  } finally {
    await uncached.close();
  }
}, 90_000);
