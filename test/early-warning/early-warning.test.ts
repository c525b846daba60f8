/**
 * Early warning (decisions §15), on real PostgreSQL: the forecast's backtest over a generated 60-day
 * history of 50 projects (weekly and daily rhythm; test/support/spend-history.ts, fixed seed),
 * anomalies on the same history with 20 key and 20 user spikes of 5× for an hour, one event per
 * scope and hour with two evaluators, and budget.forecast_exceeded once per period and subject.
 */
import pg from 'pg';
import type { Gateway } from '../../src/bootstrap.js';
import { Database } from '../../src/database/database.js';
import { anomaliesOf, evaluateHour, type Anomaly } from '../../src/early-warning/anomalies.js';
import { forecastAlerts } from '../../src/early-warning/forecast-alerts.js';
import { forecastFrom } from '../../src/forecast/forecast-data.js';
import { dec, Decimal } from '../../src/pricing/money.js';
import { ADMIN, freshDatabase, gateway, graphql, sql } from '../support/harness.js';
import {
  HISTORY_DAYS,
  HISTORY_START,
  PROJECTS,
  writeHistory,
  type Project,
  type Spike,
} from '../support/spend-history.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const SETTINGS = { multiple: 3, floorUsd: '1', floorCredits: '1000' };

let url: string;
let gw: Gateway;
let projects: Project[];
let history: Map<string, Map<number, number>>;

/** 20 key spikes (projects 0–19) and 20 user spikes (projects 20–39), on weekday working hours after day 20. */
function spikes(): Spike[] {
  const out: Spike[] = [];
  for (let i = 0; i < 40; i++) {
    let day = 20 + ((i * 7) % 38);
    while ([0, 6].includes(new Date(HISTORY_START + day * DAY).getUTCDay())) day += 1;
    out.push({ project: i, dimension: i < 20 ? 'apiKey' : 'user', index: 0, hour: day * 24 + 9 + (i % 8) });
  }
  return out;
}

beforeAll(async () => {
  url = await freshDatabase();
  gw = await gateway(url, { POLLER_ENABLED: 'false', EARLY_WARNING_MS: '0', LEDGER_SEAL_MS: '0' });
  const { rows } = await gw.db.query<{ id: string }>(
    `INSERT INTO project (id, name) SELECT gen_random_uuid(), 'team-' || lpad(g::text, 2, '0') FROM generate_series(1, $1) g RETURNING id::text`,
    [PROJECTS],
  );
  projects = rows.map((r, i) => ({
    id: r.id,
    unit: i % 5 === 4 ? 'CREDITS' : 'USD',
    keys: [`key${i}a000000`, `key${i}b000000`],
    users: [`user-${i}-a`, `user-${i}-b`, `user-${i}-c`],
  }));
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  history = await writeHistory(client, projects, spikes());
  await client.end();
}, 120_000);
afterAll(() => gw.close());

test("backtest: the forecast on the 10th of each month is within 15 % of the month's actual spend for at least 80 % of budgets", async () => {
  const errors: number[] = [];
  for (const month of [7, 8]) {
    const start = new Date(Date.UTC(2026, month, 1));
    const end = new Date(Date.UTC(2026, month + 1, 1));
    const now = new Date(Date.UTC(2026, month, 10));
    for (const p of projects) {
      const hours = history.get(p.id)!;
      let spent = 0;
      let actual = 0;
      for (const [t, amount] of hours) {
        if (t >= start.getTime() && t < end.getTime()) actual += amount;
        if (t >= start.getTime() && t < now.getTime()) spent += amount;
      }
      const f = await forecastFrom(gw.db, {
        scope: { dimension: 'project', projectId: p.id, value: '' },
        unit: p.unit,
        periodStart: start,
        periodEnd: end,
        spent: dec(spent.toFixed(6)),
        held: dec(0),
        limit: dec(1e12),
        now,
      });
      expect(f?.method).toBe('weekly-profile');
      errors.push(f!.forecastSpend!.minus(actual).abs().div(actual).toNumber());
    }
  }
  const within = errors.filter((e) => e <= 0.15).length / errors.length;
  const sorted = [...errors].sort((a, b) => a - b);
  console.log(
    `forecast backtest: ${errors.length} forecasts, ${(within * 100).toFixed(0)} % within 15 %, median error ${(sorted[Math.floor(sorted.length / 2)]! * 100).toFixed(1)} %, worst ${(sorted.at(-1)! * 100).toFixed(1)} %`,
  );
  expect(within).toBeGreaterThanOrEqual(0.8);
}, 120_000);

test('anomalies: at least 19 of 20 key spikes and 19 of 20 user spikes found, at most 2 false alarms in the 60 days', async () => {
  const injected = spikes();
  const found: Anomaly[] = [];
  let evaluated = 0;
  let slowest = 0;
  for (let h = 15 * 24; h < HISTORY_DAYS * 24; h++) {
    const started = performance.now();
    for (const a of await anomaliesOf(gw.db, new Date(HISTORY_START + h * HOUR), SETTINGS))
      found.push({ ...a, hour: h } as Anomaly & { hour: number });
    slowest = Math.max(slowest, performance.now() - started);
    evaluated += 1;
  }
  const hourOf = (a: Anomaly) => (a as Anomaly & { hour: number }).hour;
  const isSpike = (a: Anomaly) =>
    injected.some(
      (s) =>
        projects[s.project]!.id === a.projectId &&
        s.hour === hourOf(a) &&
        (a.dimension === 'project' ||
          (a.dimension === s.dimension &&
            a.value === (s.dimension === 'apiKey' ? projects[s.project]!.keys : projects[s.project]!.users)[s.index])),
    );
  const caught = (dimension: 'apiKey' | 'user') =>
    injected.filter(
      (s) =>
        s.dimension === dimension &&
        found.some((a) => a.dimension === dimension && a.projectId === projects[s.project]!.id && hourOf(a) === s.hour),
    ).length;
  const falseAlarms = found.filter((a) => !isSpike(a));
  console.log(
    `anomalies: ${evaluated} hours evaluated (slowest ${slowest.toFixed(0)} ms), keys ${caught('apiKey')}/20, users ${caught('user')}/20, false alarms ${falseAlarms.length}`,
  );
  expect(caught('apiKey')).toBeGreaterThanOrEqual(19);
  expect(caught('user')).toBeGreaterThanOrEqual(19);
  expect(falseAlarms.length).toBeLessThanOrEqual(2);
}, 180_000);

test('two evaluators of one hour: it is evaluated once and each anomaly is one event', async () => {
  const spike = spikes()[0]!;
  const hour = new Date(HISTORY_START + spike.hour * HOUR);
  const other = new Database(url, 2);
  try {
    const [a, b] = await Promise.all([evaluateHour(gw.db, hour, SETTINGS), evaluateHour(other, hour, SETTINGS)]);
    const done = [a, b].filter((x) => x !== null);
    expect(done).toHaveLength(1);
    expect(done[0]!.anomalies.length).toBeGreaterThanOrEqual(1);
    const events = await sql(gw, `SELECT type, cause FROM outbox_event WHERE type = 'spend.anomaly'`);
    expect(events).toHaveLength(done[0]!.anomalies.length);
    expect(new Set(events.map((e) => e.cause)).size).toBe(events.length);
    expect((await sql(gw, 'SELECT count(*)::int AS n FROM anomaly_hour'))[0]!.n).toBe(1);
    const listed = await graphql(
      gw,
      ADMIN,
      '{ anomalies(first: 10) { scope scopeValue spend baseline multiple unit } }',
    );
    expect(listed.body.data.anomalies).toEqual(
      expect.arrayContaining([expect.objectContaining({ scope: 'apiKey', scopeValue: projects[0]!.keys[0] })]),
    );
  } finally {
    await other.close();
  }
});

test('budget.forecast_exceeded: once per budget, period and subject, however often evaluated and whatever the forecast does after', async () => {
  const p = projects[1]!;
  const september = [...history.get(p.id)!]
    .filter(([t]) => t >= Date.UTC(2026, 8, 1) && t < Date.UTC(2026, 9, 1))
    .reduce((s, [, a]) => s + a, 0);
  const limit = (september * 0.6).toFixed(2);
  const budgetId = (
    await graphql(
      gw,
      ADMIN,
      `mutation($p: ID!, $l: Decimal!) { setBudget(projectId: $p, unit: ${p.unit}, limit: $l, period: MONTHLY, hard: false) }`,
      { p: p.id, l: limit },
    )
  ).body.data.setBudget as string;
  const at = (day: number) => new Date(Date.UTC(2026, 8, day, 12));
  expect(await forecastAlerts(gw.db, at(8))).toBe(1);
  expect(await forecastAlerts(gw.db, at(9))).toBe(1);
  await graphql(
    gw,
    ADMIN,
    `
      mutation ($b: ID!) {
        updateBudget(budgetId: $b, limit: "100000000")
      }
    `,
    { b: budgetId },
  );
  expect(await forecastAlerts(gw.db, at(10))).toBe(0);
  await graphql(
    gw,
    ADMIN,
    `
      mutation ($b: ID!, $l: Decimal!) {
        updateBudget(budgetId: $b, limit: $l)
      }
    `,
    { b: budgetId, l: limit },
  );
  expect(await forecastAlerts(gw.db, at(11))).toBe(1);
  // Too late in the period (less than a quarter left): nothing new is announced.
  expect(await forecastAlerts(gw.db, at(26))).toBe(0);
  const events = await sql(gw, `SELECT payload FROM outbox_event WHERE type = 'budget.forecast_exceeded'`);
  expect(events).toHaveLength(1);
  const data = JSON.parse(events[0]!.payload as string).data;
  expect(new Decimal(data.forecastSpend).gt(limit)).toBe(true);
  expect(data.runsOutAt.slice(0, 7)).toBe('2026-09');
  expect(data.budget).toMatchObject({ id: budgetId, limit, period: 'MONTHLY' });
});
