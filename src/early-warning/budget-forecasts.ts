/**
 * Every budget with a period (not LIFETIME, not EACH_USER) as it stands now, with its forecast for
 * the period (decisions §15): what both the console's "budgets at risk" (early-warning.service.ts)
 * and the weekly digest (digest.ts) read, written once.
 */
import type { Database } from '../database/database.js';
import { forecastFrom, scopeOfRow } from '../forecast/forecast-data.js';
import type { Forecast } from '../forecast/forecast.js';
import { dec, type Decimal, type Unit } from '../pricing/money.js';

export interface BudgetForecast {
  id: string;
  projectId: string;
  project: string;
  scope: string;
  scopeValue: string | null;
  /** A budget on part of the catalog (decisions §20): MODEL, FAMILY or KIND, and which. */
  modelScope: string | null;
  modelValue: string | null;
  unit: Unit;
  period: string;
  limit: string;
  used: Decimal;
  /** null: too little history to forecast from. */
  forecast: Forecast | null;
}

interface Row {
  id: string;
  project_id: string;
  project: string;
  scope: string;
  scope_value: string | null;
  unit: Unit;
  model_scope: string | null;
  model_value: string | null;
  period: string;
  lim: string;
  period_start: Date;
  period_end: Date;
  spent: string;
  held: string;
}

/** `projects` undefined: every project; `first`: at most that many budgets, by project name then age. */
export async function budgetForecasts(
  db: Pick<Database, 'query'>,
  now: Date,
  { projects, first }: { projects?: string[] | undefined; first?: number } = {},
): Promise<BudgetForecast[]> {
  const { rows } = await db.query<Row>(
    `SELECT b.id, b.project_id::text, p.name AS project, b.scope::text, coalesce(b.scope_value, k.prefix) AS scope_value, b.unit::text, b.model_scope::text, b.model_value,
            b.period::text, b."limit"::text AS lim, w.period_start, w.period_end, l.spent::text, l.held::text
     FROM budget b JOIN project p ON p.id = b.project_id LEFT JOIN api_key k ON k.id = b.scope_key_id
     CROSS JOIN LATERAL spendgate_period_window(b.period, $1) w
     CROSS JOIN LATERAL spendgate_budget_balance(b.id, '', w.period_start, w.period_end) l
     WHERE b.deleted_at IS NULL AND b.period <> 'LIFETIME' AND b.scope <> 'EACH_USER' AND ($2::uuid[] IS NULL OR b.project_id = ANY($2))
     ORDER BY p.name, b.created_at LIMIT $3`,
    [now, projects ?? null, first ?? null],
  );
  const out: BudgetForecast[] = [];
  for (const r of rows) {
    const forecast = await forecastFrom(db, {
      scope: scopeOfRow(r, null),
      unit: r.unit,
      periodStart: r.period_start,
      periodEnd: r.period_end,
      spent: dec(r.spent),
      held: dec(r.held),
      limit: dec(r.lim),
      now,
    });
    out.push({
      id: r.id,
      projectId: r.project_id,
      project: r.project,
      scope: r.scope,
      scopeValue: r.scope_value,
      modelScope: r.model_scope,
      modelValue: r.model_value,
      unit: r.unit,
      period: r.period,
      limit: r.lim,
      used: dec(r.spent).plus(dec(r.held)),
      forecast,
    });
  }
  return out;
}
