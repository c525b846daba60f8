/**
 * The history a forecast reads (decisions §15): spend per hour of a budget's scope from
 * spend_hourly, up to PROFILE_WEEKS back, and the scope's first recorded hour.
 *
 * Tags are not rolled up by hour, and spend_hourly has no model: a tag budget and a budget on part
 * of the catalog (decisions §20) read the day roll-ups instead, spend_rollup_total for a project,
 * spend_rollup_by for a key or a tag, summed over the part's models. A day's spend is spread evenly
 * over its hours (today's over the hours so far), so the weekly profile sees the week's days but
 * not the hours within one. End users have no roll-up by day and model: an end user's cap on part
 * of the catalog is forecast from its period's own rate.
 */
import { routesIn } from '../catalog/catalog.js';
import type { BudgetStatus } from '../budgets/budget-status.service.js';
import type { Unit } from '../pricing/money.js';
import type { Database } from '../database/database.js';
import { dec, type Decimal } from '../pricing/money.js';
import { forecast, PROFILE_WEEKS, type Forecast } from './forecast.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

export type HourlyScope = { dimension: 'project' | 'apiKey' | 'user'; projectId: string; value: string };
/** A tag budget or a budget on part of the catalog: its scope's spend by day over `models` (null: all). */
export type DailyScope = {
  dimension: 'project' | 'apiKey' | 'tag';
  projectId: string;
  value: string;
  models: string[] | null;
};
export type HistoryScope = HourlyScope | (DailyScope & { daily: true });

export interface BudgetScope {
  scope: string;
  projectId: string;
  scopeValue: string | null;
  modelScope?: string | null;
  modelValue?: string | null;
}

/** The history of a budget (and, for EACH_USER, of one of its users); null when there is none to read. */
export function scopeOf(b: BudgetScope, user: string | null): HistoryScope | null {
  if (b.modelScope || b.scope === 'TAG') return dailyScopeOf(b);
  switch (b.scope) {
    case 'PROJECT':
      return { dimension: 'project', projectId: b.projectId, value: '' };
    case 'API_KEY':
      return { dimension: 'apiKey', projectId: b.projectId, value: b.scopeValue ?? '' };
    case 'USER':
      return { dimension: 'user', projectId: b.projectId, value: b.scopeValue ?? '' };
    case 'EACH_USER':
      return user === null ? null : { dimension: 'user', projectId: b.projectId, value: user };
    default:
      return null;
  }
}

/** scopeOf for a budget row as the early-warning queries select it. */
export function scopeOfRow(
  r: {
    scope: string;
    project_id: string;
    scope_value: string | null;
    model_scope: string | null;
    model_value: string | null;
  },
  user: string | null,
): HistoryScope | null {
  const b = { scope: r.scope, projectId: r.project_id, scopeValue: r.scope_value };
  return scopeOf({ ...b, modelScope: r.model_scope, modelValue: r.model_value }, user);
}

function dailyScopeOf(b: BudgetScope): HistoryScope | null {
  const models = b.modelScope
    ? routesIn(b.modelScope as 'MODEL' | 'FAMILY' | 'KIND', b.modelValue ?? '').map((r) => r.id)
    : null;
  const dimension = ({ PROJECT: 'project', API_KEY: 'apiKey', TAG: 'tag' } as const)[b.scope as 'PROJECT'];
  if (!dimension || models?.length === 0) return null;
  return {
    daily: true,
    dimension,
    projectId: b.projectId,
    value: b.scope === 'PROJECT' ? '' : (b.scopeValue ?? ''),
    models,
  };
}

export interface ForecastRequest {
  scope: HistoryScope | null;
  unit: Unit;
  periodStart: Date;
  periodEnd: Date | null;
  spent: Decimal;
  held: Decimal;
  limit: Decimal;
  now?: Date;
}

export async function forecastFrom(db: Pick<Database, 'query'>, r: ForecastRequest): Promise<Forecast | null> {
  const now = r.now ?? new Date();
  const { hourly, firstHour } = !r.scope
    ? { hourly: new Map<number, Decimal>(), firstHour: null }
    : 'daily' in r.scope
      ? await dailyHistory(db, r.scope, r.unit, now)
      : await hourlyHistory(db, r.scope, r.unit, now);
  return forecast({
    hourly,
    firstHour: r.scope ? firstHour : r.periodStart.getTime(),
    periodStart: r.periodStart,
    periodEnd: r.periodEnd,
    spent: r.spent,
    held: r.held,
    limit: r.limit,
    now,
    linearOnly: r.scope === null,
  });
}

/** A budget's forecast as budgetStatus shows it (its period; EACH_USER: the user nearest the limit). */
export function forecastOfStatus(db: Pick<Database, 'query'>, b: BudgetStatus): Promise<Forecast | null> {
  return forecastFrom(db, {
    scope: scopeOf(b, b.user),
    unit: b.unit,
    periodStart: b.periodStart,
    periodEnd: b.period === 'LIFETIME' ? null : b.periodEnd,
    spent: b.spent,
    held: b.held,
    limit: b.limit,
  });
}

type History = { hourly: Map<number, Decimal>; firstHour: number | null };

async function hourlyHistory(db: Pick<Database, 'query'>, scope: HourlyScope, unit: Unit, now: Date): Promise<History> {
  const hourly = new Map<number, Decimal>();
  let firstHour: number | null = null;
  const from = new Date(now.getTime() - (PROFILE_WEEKS * 168 + 1) * HOUR);
  const { rows } = await db.query<{ hour: Date; amount: string; first: Date | null }>(
    `SELECT h.hour, h.amount::text AS amount, NULL::timestamptz AS first FROM spend_hourly h
     WHERE h.dimension = $1 AND h.project_id = $2 AND h.value = $3 AND h.unit = $4::"Unit" AND h.hour >= $5 AND h.hour < date_trunc('hour', $6::timestamptz)
     UNION ALL
     SELECT NULL, NULL, min(f.hour) FROM spend_hourly f WHERE f.dimension = $1 AND f.project_id = $2 AND f.value = $3 AND f.unit = $4::"Unit" AND f.hour <= $6`,
    [scope.dimension, scope.projectId, scope.value, unit, from, now],
  );
  for (const row of rows) {
    if (row.hour) hourly.set(row.hour.getTime(), dec(row.amount));
    else firstHour = row.first ? row.first.getTime() : null;
  }
  return { hourly, firstHour };
}

/** Spend by UTC day of a budget on part of the catalog, spread over the day's hours up to now. */
async function dailyHistory(db: Pick<Database, 'query'>, scope: DailyScope, unit: Unit, now: Date): Promise<History> {
  const from = new Date(now.getTime() - (PROFILE_WEEKS * 7 + 1) * DAY);
  const args = [scope.projectId, scope.models, unit, from, now];
  const { rows } =
    scope.dimension === 'project'
      ? await db.query<{ day: Date; amount: string | null; first: Date | null }>(
          `SELECT r.day::timestamp AT TIME ZONE 'UTC' AS day, sum(r.amount)::text AS amount, NULL::timestamptz AS first FROM spend_rollup_total r
           WHERE r.project_id = $1 AND ($2::text[] IS NULL OR r.model = ANY($2::text[])) AND r.unit = $3::"Unit" AND r.day >= ($4::timestamptz AT TIME ZONE 'UTC')::date AND r.day <= ($5::timestamptz AT TIME ZONE 'UTC')::date
           GROUP BY r.day
           UNION ALL
           SELECT NULL, NULL, min(f.day)::timestamp AT TIME ZONE 'UTC' FROM spend_rollup_total f
           WHERE f.project_id = $1 AND ($2::text[] IS NULL OR f.model = ANY($2::text[])) AND f.unit = $3::"Unit" AND f.day <= ($5::timestamptz AT TIME ZONE 'UTC')::date`,
          args,
        )
      : await db.query<{ day: Date; amount: string | null; first: Date | null }>(
          `SELECT r.period::timestamp AT TIME ZONE 'UTC' AS day, sum(r.amount)::text AS amount, NULL::timestamptz AS first FROM spend_rollup_by r
           WHERE r.dimension = $6 AND r.project_id = $1 AND r.value = $7 AND ($2::text[] IS NULL OR r.model = ANY($2::text[])) AND r.unit = $3::"Unit"
             AND r.period >= ($4::timestamptz AT TIME ZONE 'UTC')::date AND r.period <= ($5::timestamptz AT TIME ZONE 'UTC')::date
           GROUP BY r.period
           UNION ALL
           SELECT NULL, NULL, min(f.period)::timestamp AT TIME ZONE 'UTC' FROM spend_rollup_by f
           WHERE f.dimension = $6 AND f.project_id = $1 AND f.value = $7 AND ($2::text[] IS NULL OR f.model = ANY($2::text[])) AND f.unit = $3::"Unit"
             AND f.period <= ($5::timestamptz AT TIME ZONE 'UTC')::date`,
          [...args, scope.dimension, scope.value],
        );
  const current = Math.floor(now.getTime() / HOUR) * HOUR;
  const hourly = new Map<number, Decimal>();
  let firstHour: number | null = null;
  for (const row of rows) {
    if (!row.day) {
      firstHour = row.first ? row.first.getTime() : null;
      continue;
    }
    const start = row.day.getTime();
    // today's spend over the hours gone so far; the current hour is not history yet (as with spend_hourly)
    const hours = Math.min(24, (current - start) / HOUR);
    if (hours <= 0) continue;
    const each = dec(row.amount ?? '0').div(hours);
    for (let h = 0; h < hours; h++) hourly.set(start + h * HOUR, each);
  }
  return { hourly, firstHour: firstHour ?? null };
}
