/**
 * Metrics that agree with the books (decisions §21), with a real Prometheus (Debian's) scraping two
 * gateway instances on one PostgreSQL every second while they take and settle work: /metrics of
 * both (their own traffic) and /metrics/books of one (the books, from the database).
 *
 * - The net spend of the window, increase(spend) − increase(credit) summed by unit, equals
 *   spendReport's totals for the same window, per unit, to a float's precision (the counters are
 *   floats; the books are exact). Evaluated at the books' last sample with every series born at 0,
 *   so Prometheus's extrapolation adds nothing (docs/operations.md says why that matters).
 * - Each budget's gauges equal budgetStatus: limit, used (spent), held, forecast.
 * - The review queue and open vendor differences are there; no series names a user or a task.
 */
import { readFileSync } from 'node:fs';
import type { Gateway } from '../../src/bootstrap.js';
import { chatBody, imageBody } from '../support/builders.js';
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
  submitGeneration,
} from '../support/harness.js';
import { startPrometheus, type Prometheus } from '../support/prometheus.js';

let a: Gateway;
let b: Gateway;
let prometheus: Prometheus;
const host = (gw: Gateway) => new URL(gw.url).host;
const ENV = { SIMULATOR_DELAY_MS: '300', POLL_INTERVAL_MS: '100', METRICS_NEW_SERIES_MS: '10000' };

beforeAll(async () => {
  const url = await freshDatabase();
  a = await gateway(url, ENV);
  b = await gateway(url, ENV);
  prometheus = await startPrometheus([
    { name: 'spendgate', path: '/metrics', targets: [host(a), host(b)] },
    { name: 'spendgate-books', path: '/metrics/books', targets: [host(a)] },
  ]);
}, 60_000);
afterAll(async () => {
  await prometheus?.stop();
  await a?.close();
  await b?.close();
});

test('under load over two instances: the net spend of the window equals spendReport per unit, and the budget gauges equal budgetStatus', async () => {
  const teams = [await projectWithKey(a, 'search'), await projectWithKey(a, 'vision')];
  for (const t of teams) {
    const set = await graphql(
      a,
      ADMIN,
      `
        mutation ($p: ID!) {
          usd: setBudget(projectId: $p, unit: USD, limit: "50", period: MONTHLY, hard: false)
          credits: setBudget(projectId: $p, unit: CREDITS, limit: "100000", period: DAILY, hard: true)
        }
      `,
      { p: t.projectId },
    );
    expect(set.body.errors).toBeUndefined();
  }
  const results = await Promise.all(
    Array.from({ length: 120 }, (_, i) => {
      const gw = i % 2 ? b : a;
      const { key } = teams[i % 4 < 2 ? 0 : 1]!;
      if (i % 3 === 0) return submitChat(gw, key, chatBody({ messages: [{ role: 'user', content: `question ${i}` }] }));
      return submitGeneration(gw, key, imageBody({ prompt: `picture ${i}` }));
    }),
  );
  expect(results.filter((r) => r.status !== 200)).toEqual([]);
  // a refund, posted from the other instance: a credit, counted apart
  const refund = await graphql(
    b,
    ADMIN,
    `
      mutation ($p: ID!) {
        adjustLedger(projectId: $p, unit: USD, amount: "-0.12", reason: "goodwill credit")
      }
    `,
    { p: teams[1]!.projectId },
  );
  expect(refund.body.errors).toBeUndefined();
  await eventually(
    async () => (await sql(a, `SELECT count(*)::int AS n FROM task WHERE settled_at IS NULL`))[0]!.n === 0,
    60_000,
    200,
  );

  const day = 86_400_000;
  const from = new Date(Math.floor(Date.now() / day) * day - day).toISOString();
  const to = new Date(Math.floor(Date.now() / day) * day + 2 * day).toISOString();
  const report = await graphql<{ spendReport: Array<{ totals: Array<{ unit: string; amount: string }> }> }>(
    a,
    ADMIN,
    `
      query ($f: DateTime!, $t: DateTime!) {
        spendReport(from: $f, to: $t) {
          totals {
            unit
            amount
          }
        }
      }
    `,
    { f: from, t: to },
  );
  const books = Object.fromEntries(report.body.data!.spendReport[0]!.totals.map((t) => [t.unit, Number(t.amount)]));
  expect(Object.keys(books).sort()).toEqual(['CREDITS', 'USD']);

  const NET = `sum by (unit) (increase(spendgate_spend_total[10m])) - sum by (unit) (increase(spendgate_credit_total[10m]))`;
  // Prometheus has the books as they stand: a scrape after the last settlement and past the new series' 0s
  const at = await eventually(
    async () => {
      const [last] = await prometheus.query('max(timestamp(spendgate_spend_total))');
      if (!last) return null;
      const time = Number(last.value[1]);
      const net = await prometheus.query(NET, time);
      const agrees = net.length === 2 && net.every((s) => Math.abs(Number(s.value[1]) - books[s.metric.unit!]!) < 1e-9);
      return agrees ? { time, net } : null;
    },
    30_000,
    500,
  );
  const net = Object.fromEntries(at.net.map((s) => [s.metric.unit!, Number(s.value[1])]));
  for (const unit of ['USD', 'CREDITS']) expect(net[unit]).toBeCloseTo(books[unit]!, 9);
  // The refund is a credit: spend alone is the report plus it
  const [credit] = await prometheus.query(`sum(increase(spendgate_credit_total{unit="USD"}[10m]))`, at.time);
  expect(Number(credit!.value[1])).toBeCloseTo(0.12, 9);

  // Budget gauges: every budget of both projects, equal to budgetStatus now (no settlement moves them any more)
  for (const t of teams) {
    const status = await graphql<{
      budgetStatus: Array<{
        budgetId: string;
        limit: string;
        spent: string;
        held: string;
        forecastSpend: string | null;
      }>;
    }>(
      a,
      ADMIN,
      `
        query ($p: ID!) {
          budgetStatus(projectId: $p) {
            budgetId
            limit
            spent
            held
            forecastSpend
          }
        }
      `,
      {
        p: t.projectId,
      },
    );
    for (const s of status.body.data!.budgetStatus) {
      const gauge = async (name: string) =>
        (await prometheus.query(`${name}{job="spendgate-books",budget="${s.budgetId}"}`)).map((x) =>
          Number(x.value[1]),
        );
      expect(await gauge('spendgate_budget_limit')).toEqual([Number(s.limit)]);
      expect((await gauge('spendgate_budget_used'))[0]).toBeCloseTo(Number(s.spent), 9);
      expect(await gauge('spendgate_budget_held')).toEqual([Number(s.held)]);
      expect(await gauge('spendgate_budget_forecast')).toEqual(
        s.forecastSpend === null ? [] : [Number(s.forecastSpend)],
      );
    }
  }

  // Both instances' own traffic is there, by instance; the books come from one target only
  const submissions = await prometheus.query(
    `sum by (instance) (spendgate_http_request_duration_seconds_count{route="/api-platform/v1/generations"})`,
  );
  expect(submissions.map((s) => s.metric.instance).sort()).toEqual([host(a), host(b)].sort());
  const spendSeries = await prometheus.query('spendgate_spend_total');
  expect(new Set(spendSeries.map((s) => s.metric.job))).toEqual(new Set(['spendgate-books']));
  expect(new Set(spendSeries.map((s) => s.metric.project))).toEqual(new Set(['search', 'vision']));
  // No label names a user, a key or a task
  for (const s of spendSeries)
    expect(Object.keys(s.metric).sort()).toEqual(['__name__', 'instance', 'job', 'model', 'project', 'status', 'unit']);
}, 180_000);

test('METRICS_MAX_PROJECTS: the oldest projects keep their names, the rest are "(other)"; the review queue is counted', async () => {
  const gw = await gateway(await freshDatabase(), { ...ENV, METRICS_MAX_PROJECTS: '1', METRICS_NEW_SERIES_MS: '0' });
  try {
    const first = await projectWithKey(gw, 'first');
    const second = await projectWithKey(gw, 'second');
    const third = await projectWithKey(gw, 'third');
    for (const p of [first, second, third]) {
      const chat = await submitChat(gw, p.key, chatBody());
      expect(chat.status).toBe(200);
    }
    await eventually(
      async () => (await sql(gw, `SELECT count(*)::int AS n FROM task WHERE settled_at IS NULL`))[0]!.n === 0,
      30_000,
      100,
    );
    await sql(gw, `UPDATE task SET needs_review = true WHERE project_id = $1`, [third.projectId]);
    const text = (await http(`${gw.url}/metrics/books`)).text;
    expect(text).toMatch(/spendgate_spend_total\{project="first",model="glm-5.3",unit="CREDITS",status="ready"\} \d/);
    expect(text).toMatch(
      /spendgate_spend_total\{project="\(other\)",model="glm-5.3",unit="CREDITS",status="ready"\} \d/,
    );
    expect(text).not.toMatch(/project="(second|third)"/);
    expect(text).toMatch(/spendgate_review_open\{project="\(other\)"\} 1/);
    // other projects' amounts are summed into one series: first's + the two others' = the report
    const amounts = [
      ...text.matchAll(/spendgate_spend_total\{project="[^"]+",model="glm-5.3",unit="CREDITS",status="ready"\} (\S+)/g),
    ].map((m) => Number(m[1]));
    const [total] = await sql(gw, `SELECT sum(amount)::float8 AS t FROM spend_rollup WHERE status = 'ready'`);
    expect(amounts.reduce((s, x) => s + x, 0)).toBeCloseTo(total!.t as number, 9);
  } finally {
    await gw.close();
  }
}, 60_000);

test("the Grafana dashboard: every panel's query names metrics that exist and answers on the same Prometheus", async () => {
  const dashboard = JSON.parse(readFileSync('deploy/grafana/dashboards/spendgate.json', 'utf8')) as {
    panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
  };
  const families = new Set<string>();
  const sampled = new Set<string>();
  for (const path of ['/metrics', '/metrics/books']) {
    const text = (await http(`${a.url}${path}`)).text;
    for (const [, name, kind] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
      families.add(name!);
      if (kind === 'histogram') for (const suffix of ['_bucket', '_count', '_sum']) families.add(`${name}${suffix}`);
    }
    for (const [, name] of text.matchAll(/^([a-z_0-9]+)[{ ]/gm)) sampled.add(name!);
  }
  const titles = dashboard.panels.map((p) => p.title).join(' | ');
  for (const topic of [
    /spend by project/i,
    /spend by model/i,
    /budgets at risk/i,
    /submissions/i,
    /latency/i,
    /review/i,
  ])
    expect(titles).toMatch(topic);
  for (const panel of dashboard.panels) {
    for (const { expr } of panel.targets) {
      const named = [...expr.matchAll(/\b(spendgate_[a-z0-9_]+)/g)].map((m) => m[1]!);
      expect({ panel: panel.title, missing: named.filter((n) => !families.has(n)) }).toEqual({
        panel: panel.title,
        missing: [],
      });
      const promql = expr.replaceAll('$__rate_interval', '1m').replaceAll('$__range', '10m');
      // a filter (> 0.8) may rightly keep nothing: what it filters must answer, when its metrics have samples
      // (no budget here has the week of history a forecast needs)
      const answered = await prometheus.query(promql.replace(/\s*>\s*[\d.]+$/, ''));
      if (!named.every((n) => sampled.has(n))) continue;
      expect({ panel: panel.title, expr, series: answered.length > 0 }).toEqual({
        panel: panel.title,
        expr,
        series: true,
      });
    }
  }
});
