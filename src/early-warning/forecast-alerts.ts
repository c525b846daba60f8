/**
 * `budget.forecast_exceeded` (decisions §15): for every live budget with a period end, and every
 * end user of an EACH_USER budget who has used a tenth of its limit, the forecast of the period's
 * spend; when it passes the limit while at least FORECAST_MIN_REMAINING of the period is left, one
 * event per budget, period and subject (the outbox's cause): a forecast that dips and rises again
 * is not announced twice.
 */
import type { Unit } from '../pricing/money.js';
import type { Database } from '../database/database.js';
import { forecastFrom, scopeOfRow } from '../forecast/forecast-data.js';
import { dec } from '../pricing/money.js';

/** The share of the period that must remain for a forecast alert to be worth sending. */
export const FORECAST_MIN_REMAINING = 0.25;
/** EACH_USER: users below this share of the limit are not forecast one by one. */
const USER_MIN_SHARE = 0.1;

interface Subject {
  budget_id: string;
  project_id: string;
  project_name: string;
  scope: string;
  scope_value: string | null;
  unit: Unit;
  model_scope: string | null;
  model_value: string | null;
  period: string;
  lim: string;
  period_start: Date;
  period_end: Date;
  subject: string;
  spent: string;
  held: string;
}

/** Returns how many budgets and subjects are forecast past their limit now (each announced once). */
export async function forecastAlerts(db: Database, now: Date = new Date()): Promise<number> {
  const { rows } = await db.query<Subject>(
    `SELECT b.id AS budget_id, b.project_id::text, p.name AS project_name, b.scope::text, coalesce(b.scope_value, k.prefix) AS scope_value,
            b.unit::text, b.model_scope::text, b.model_value, b.period::text, b."limit"::text AS lim, w.period_start, w.period_end, s.subject, s.spent::text, s.held::text
     FROM budget b JOIN project p ON p.id = b.project_id LEFT JOIN api_key k ON k.id = b.scope_key_id
     CROSS JOIN LATERAL spendgate_period_window(b.period, $1) w
     CROSS JOIN LATERAL (
       SELECT '' AS subject, coalesce(bp.spent, l.spent) AS spent, coalesce(bp.held, l.held) AS held
       FROM (SELECT 1) one
       LEFT JOIN budget_period bp ON bp.budget_id = b.id AND bp.period_start = w.period_start AND bp.subject = ''
       LEFT JOIN LATERAL (SELECT * FROM spendgate_budget_balance(b.id, '', w.period_start, w.period_end) WHERE bp.budget_id IS NULL) l ON true
       WHERE b.scope <> 'EACH_USER'
       UNION ALL
       SELECT u.subject, u.spent, u.held FROM budget_period u
       WHERE b.scope = 'EACH_USER' AND u.budget_id = b.id AND u.period_start = w.period_start AND u.spent + u.held >= b."limit" * $2
     ) s
     WHERE b.deleted_at IS NULL AND b.period <> 'LIFETIME'
       AND extract(epoch FROM w.period_end - $1) >= $3 * extract(epoch FROM w.period_end - w.period_start)`,
    [now, USER_MIN_SHARE, FORECAST_MIN_REMAINING],
  );
  let over = 0;
  for (const r of rows) {
    const limit = dec(r.lim);
    const f = await forecastFrom(db, {
      scope: scopeOfRow(r, r.subject || null),
      unit: r.unit,
      periodStart: r.period_start,
      periodEnd: r.period_end,
      spent: dec(r.spent),
      held: dec(r.held),
      limit,
      now,
    });
    if (!f?.forecastSpend || f.forecastSpend.lte(limit)) continue;
    const data = {
      project: { id: r.project_id, name: r.project_name },
      budget: {
        id: r.budget_id,
        scope: r.scope,
        scopeValue: r.scope === 'EACH_USER' ? null : r.scope_value,
        modelScope: r.model_scope,
        modelValue: r.model_value,
        user: r.subject || null,
        unit: r.unit,
        period: r.period,
        limit: r.lim,
        spent: r.spent,
        held: r.held,
        remaining: limit.minus(dec(r.spent)).minus(dec(r.held)).toFixed(),
        periodStart: r.period_start.toISOString(),
        periodEnd: r.period_end.toISOString(),
      },
      forecastSpend: f.forecastSpend.toDecimalPlaces(6).toFixed(),
      runsOutAt: f.runsOutAt?.toISOString() ?? null,
      method: f.method,
    };
    const cause = `forecast:${r.budget_id}:${r.period_start.toISOString()}:${r.subject}`;
    // Once per budget, period and subject: the outbox keeps one event per cause.
    await db.query(`SELECT spendgate_emit('budget.forecast_exceeded', $1, $2, $3::jsonb)`, [
      r.project_id,
      cause,
      JSON.stringify(data),
    ]);
    over += 1;
  }
  return over;
}
