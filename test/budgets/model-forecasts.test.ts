/**
 * Forecasts of budgets on part of the catalog (decisions §15, §20), on real PostgreSQL: such a
 * budget is forecast from the day roll-ups of its own models (spend_rollup_total for a project,
 * spend_rollup_by for a key), not from its scope's whole spend. The history is written into the
 * roll-ups (a steady weekly rhythm, another model twenty-five times as costly beside it); the
 * forecast then equals the rhythm over the period's remaining hours. Read through GraphQL's
 * budgetStatus (now), the console's budgets at risk and budget.forecast_exceeded (at a fixed hour).
 */
import type { Gateway } from '../../src/bootstrap.js';
import { budgetForecasts } from '../../src/early-warning/budget-forecasts.js';
import { forecastAlerts } from '../../src/early-warning/forecast-alerts.js';
import { emailMessage } from '../../src/alerts/email-message.js';
import { Decimal } from '../../src/pricing/money.js';
import { ADMIN, freshDatabase, gateway, graphql, projectWithKey, sql } from '../support/harness.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Spend a day of the budget's model: 2 USD on weekdays, 0.5 at weekends (a key: half of that). */
const rate = (t: number, share = 1) => ([0, 6].includes(new Date(t).getUTCDay()) ? 0.5 : 2) * share;
/** A fixed hour for the alert and the at-risk list: a Wednesday noon, 20 days of August left. */
const FIXED_NOW = Date.UTC(2026, 7, 12, 12);

let gw: Gateway;
let projectId: string;
let prefix: string;

/** 29 days before `now` and today's hours so far; seedream-4.0 at `rate`, nano-banana-pro at 50 a day. */
async function writeHistory(now: number): Promise<void> {
  const today = Math.floor(now / DAY) * DAY;
  const hoursToday = (Math.floor(now / HOUR) * HOUR - today) / HOUR;
  for (let day = today - 29 * DAY; day <= today; day += DAY) {
    const part = day === today ? hoursToday / 24 : 1;
    const date = new Date(day).toISOString().slice(0, 10);
    for (const [model, amount] of [
      ['seedream-4.0', rate(day) * part],
      ['nano-banana-pro', 50 * part],
    ] as const) {
      await sql(
        gw,
        `INSERT INTO spend_rollup_total (day, project_id, model, unit, tasks, amount) VALUES ($1::date, $2, $3, 'USD', 1, $4::numeric)`,
        [date, projectId, model, amount.toFixed(9)],
      );
      await sql(
        gw,
        `INSERT INTO spend_rollup_by (dimension, period, project_id, value, model, unit, price_book_version, tasks, amount)
         VALUES ('apiKey', $1::date, $2, $3, $4, 'USD', 1, 1, $5::numeric)`,
        [date, projectId, prefix, model, (amount / 2).toFixed(9)],
      );
      await sql(
        gw,
        `INSERT INTO spend_rollup_by (dimension, period, project_id, value, model, unit, price_book_version, tasks, amount)
         VALUES ('tag', $1::date, $2, 'team=ml', $3, 'USD', 1, 1, $4::numeric)`,
        [date, projectId, model, (amount / 4).toFixed(9)],
      );
    }
  }
}

/** What the rhythm adds over the rest of the month from `now`'s next hour (spent and held are 0). */
function expected(now: number, share = 1, others = 0): number {
  const d = new Date(now);
  const end = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  let total = 0;
  for (let h = Math.floor(now / HOUR) * HOUR + HOUR; h < end; h += HOUR)
    total += (rate(h, share) + others * share) / 24;
  return total;
}

const near = (actual: string | null, want: number, tolerance: number) => {
  expect(actual).not.toBeNull();
  expect(Math.abs(Number(actual) - want)).toBeLessThanOrEqual(tolerance);
};

beforeAll(async () => {
  gw = await gateway(await freshDatabase(), { POLLER_ENABLED: 'false', EARLY_WARNING_MS: '0' });
  const made = await projectWithKey(gw);
  projectId = made.projectId;
  prefix = made.key.slice(3, 15);
  await writeHistory(FIXED_NOW);
  await writeHistory(Date.now());
});
afterAll(() => gw.close());

async function setBudget(args: string): Promise<string> {
  const made = await graphql(
    gw,
    ADMIN,
    `mutation ($p: ID!) { setBudget(projectId: $p, unit: USD, hard: false, ${args.includes('modelScope') ? '' : 'modelScope: MODEL, modelValue: "seedream-4.0", '}${args}) }`,
    { p: projectId },
  );
  expect(made.body.errors).toBeUndefined();
  return made.body.data!.setBudget as string;
}

test("a model's cap is forecast from that model's days, for the project, a key and a tag; a tag budget from its days", async () => {
  const whole = await setBudget(`period: MONTHLY, limit: "1000"`);
  const byKey = await setBudget(`period: MONTHLY, limit: "1000", scope: API_KEY, scopeValue: "${prefix}"`);
  const byTag = await setBudget(`period: MONTHLY, limit: "1000", scope: TAG, scopeValue: "team=ml"`);
  // A tag budget on every model: tags have no hourly roll-up, so it reads the same days (decisions §15)
  const wholeTag = await setBudget(
    `period: MONTHLY, limit: "1000", scope: TAG, scopeValue: "team=ml", modelScope: null`,
  );
  const status = await graphql<{ budgetStatus: Array<{ budgetId: string; forecastSpend: string | null }> }>(
    gw,
    ADMIN,
    `
      query ($p: ID!) {
        budgetStatus(projectId: $p) {
          budgetId
          forecastSpend
        }
      }
    `,
    { p: projectId },
  );
  const now = Date.now();
  const of = (id: string) => status.body.data!.budgetStatus.find((b) => b.budgetId === id)!.forecastSpend;
  // nano-banana-pro's 50 a day would add over a thousand: only seedream-4.0's rhythm is there
  near(of(whole), expected(now), 0.2);
  near(of(byKey), expected(now, 0.5), 0.1);
  near(of(byTag), expected(now, 0.25), 0.05);
  near(of(wholeTag), expected(now, 0.25, 50), 2);
  expect(Number(of(wholeTag))).toBeGreaterThan(Number(of(byTag)));

  // The console's budgets at risk: a weekly cap its forecast passes (unless the week, from Monday, has no hour left)
  const tiny = await setBudget(`period: WEEKLY, limit: "0.000001", scope: API_KEY, scopeValue: "${prefix}"`);
  const risk = await graphql<{ budgetsAtRisk: Array<{ budgetId: string; modelScope: string; modelValue: string }> }>(
    gw,
    ADMIN,
    `
      {
        budgetsAtRisk {
          budgetId
          modelScope
          modelValue
        }
      }
    `,
  );
  expect(risk.body.errors).toBeUndefined();
  const listed = risk.body.data!.budgetsAtRisk.filter((b) => ![whole, byKey, byTag, wholeTag].includes(b.budgetId));
  expect(listed).toEqual(
    (Date.now() + 3 * DAY) % (7 * DAY) < 7 * DAY - 2 * HOUR
      ? [{ budgetId: tiny, modelScope: 'MODEL', modelValue: 'seedream-4.0' }]
      : [],
  );
});

test("at a fixed hour: a family's cap has a weekly profile of its models and is announced once, naming the family", async () => {
  const capped = await setBudget(`period: MONTHLY, limit: "10", modelScope: FAMILY, modelValue: "seedream"`);
  const forecasts = await budgetForecasts(gw.db, new Date(FIXED_NOW), { projects: [projectId] });
  const mine = forecasts.find((f) => f.id === capped)!;
  expect(mine).toMatchObject({ modelScope: 'FAMILY', modelValue: 'seedream' });
  expect(mine.forecast!.method).toBe('weekly-profile');
  near(mine.forecast!.forecastSpend!.toFixed(), expected(FIXED_NOW), 0.000001);
  expect(new Decimal(mine.forecast!.forecastSpend!).gt(10)).toBe(true);

  expect(await forecastAlerts(gw.db, new Date(FIXED_NOW))).toBeGreaterThanOrEqual(1);
  await forecastAlerts(gw.db, new Date(FIXED_NOW + HOUR));
  const events = await sql(gw, `SELECT payload FROM outbox_event WHERE type = 'budget.forecast_exceeded'`);
  const announced = events.map((e) => JSON.parse(e.payload as string)).filter((e) => e.data.budget.id === capped);
  expect(announced).toHaveLength(1);
  expect(announced[0].data.budget).toMatchObject({ modelScope: 'FAMILY', modelValue: 'seedream', limit: '10' });
  expect(emailMessage(JSON.stringify(announced[0])).subject).toContain('budget for seedream of project');
});
