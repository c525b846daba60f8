/**
 * The weekly spend digest (decisions §15): the last complete ISO week (Monday 00:00 UTC to
 * Monday), once (the outbox's cause `digest:<monday>`), as a `spend.digest` event of the whole
 * gateway, delivered to the endpoints that list it (email ones, typically). Spend by project and the
 * top keys are the spend report's own figures (spendReport, the same roll-ups); the top end users
 * come from the hourly roll-up (the report groups users by whole months); budgets at risk are those
 * whose forecast passes their limit, with the date they run out.
 */
import type { Database } from '../database/database.js';
import { budgetForecasts } from './budget-forecasts.js';
import { dec, type AmountText, type Unit } from '../pricing/money.js';
import { spendReport } from '../reports/spend-report.js';

const DAY = 86_400_000;
const TOP = 5;

export interface Digest {
  week: { from: string; to: string };
  projects: Array<{ id: string; name: string; totals: Array<AmountText & { tasks: number }> }>;
  topKeys: Array<AmountText & { key: string; name: string | null }>;
  topUsers: Array<AmountText & { project: string; user: string }>;
  budgetsAtRisk: Array<{
    project: string;
    budgetId: string;
    scope: string;
    scopeValue: string | null;
    modelScope: string | null;
    modelValue: string | null;
    unit: Unit;
    period: string;
    limit: string;
    forecastSpend: string;
    runsOutAt: string | null;
  }>;
}

/** The Monday 00:00 UTC that starts the week holding `at`. */
export function weekStart(at: Date): Date {
  const day = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));
  return new Date(day.getTime() - ((day.getUTCDay() + 6) % 7) * DAY);
}

export async function buildDigest(db: Database, from: Date, to: Date, now: Date = new Date()): Promise<Digest> {
  const byProject = await spendReport(db, { from, to, groupBy: ['project'], measures: [] });
  const { rows: names } = await db.query<{ id: string; name: string }>('SELECT id::text, name FROM project');
  const idOf = new Map(names.map((p) => [p.name, p.id]));
  const projects = new Map<string, Digest['projects'][number]>();
  for (const r of byProject) {
    const name = r.keys[0]!;
    const entry = projects.get(name) ?? { id: idOf.get(name) ?? '', name, totals: [] };
    entry.totals.push({ unit: r.unit, amount: r.amount, tasks: r.tasks });
    projects.set(name, entry);
  }
  const topKeys: Digest['topKeys'] = [];
  for (const unit of ['USD', 'CREDITS'] as const) {
    for (const r of await spendReport(db, {
      from,
      to,
      groupBy: ['apiKey'],
      unit,
      orderBy: 'amount',
      first: TOP,
      measures: [],
    })) {
      topKeys.push({ key: r.keys[0]!, name: r.apiKeyName ?? null, unit, amount: r.amount });
    }
  }
  const { rows: topUsers } = await db.query<Digest['topUsers'][number]>(
    `SELECT p.name AS project, h.value AS "user", h.unit::text AS unit, sum(h.amount)::text AS amount
     FROM spend_hourly h JOIN project p ON p.id = h.project_id
     WHERE h.dimension = 'user' AND h.value <> '' AND h.hour >= $1 AND h.hour < $2
     GROUP BY p.name, h.value, h.unit ORDER BY h.unit, sum(h.amount) DESC, p.name, h.value LIMIT ${TOP * 2}`,
    [from, to],
  );
  return {
    week: { from: from.toISOString(), to: to.toISOString() },
    projects: [...projects.values()],
    topKeys,
    topUsers,
    budgetsAtRisk: await budgetsAtRisk(db, now),
  };
}

/** The budgets whose forecast passes their limit this period. */
async function budgetsAtRisk(db: Database, now: Date): Promise<Digest['budgetsAtRisk']> {
  return (await budgetForecasts(db, now))
    .filter((b) => b.forecast?.forecastSpend && b.forecast.forecastSpend.gt(dec(b.limit)))
    .map((b) => ({
      project: b.project,
      budgetId: b.id,
      scope: b.scope,
      scopeValue: b.scopeValue,
      modelScope: b.modelScope,
      modelValue: b.modelValue,
      unit: b.unit,
      period: b.period,
      limit: b.limit,
      forecastSpend: b.forecast!.forecastSpend!.toDecimalPlaces(6).toFixed(),
      runsOutAt: b.forecast!.runsOutAt?.toISOString() ?? null,
    }));
}

/** Emits last week's digest once, when an endpoint of every project subscribes to it. */
export async function weeklyDigest(db: Database, now: Date = new Date()): Promise<boolean> {
  const to = weekStart(now);
  const from = new Date(to.getTime() - 7 * DAY);
  const cause = `digest:${from.toISOString().slice(0, 10)}`;
  // Only for those who asked for it, and once.
  const { rows } = await db.query<{ wanted: boolean; done: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM webhook_endpoint WHERE enabled AND deleted_at IS NULL AND project_id IS NULL AND 'spend.digest' = ANY(events)) AS wanted,
            EXISTS (SELECT 1 FROM outbox_event WHERE cause = $1) AS done`,
    [cause],
  );
  if (!rows[0]!.wanted || rows[0]!.done) return false;
  const digest = await buildDigest(db, from, to, now);
  await db.query(`SELECT spendgate_emit('spend.digest', NULL, $1, $2::jsonb)`, [cause, JSON.stringify(digest)]);
  return true;
}
