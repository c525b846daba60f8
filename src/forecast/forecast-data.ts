/**
 * The history a forecast reads (decisions §15): spend per hour of a budget's scope from
 * spend_hourly, up to PROFILE_WEEKS back, and the scope's first recorded hour. A tag budget has no
 * hourly history (tags are not rolled up by hour): it is forecast from its period's own rate.
 */
import type { Unit } from '../pricing/money.js';
import type { Database } from '../database/database.js';
import { dec, type Decimal } from '../pricing/money.js';
import { forecast, PROFILE_WEEKS, type Forecast } from './forecast.js';

export type HourlyScope = { dimension: 'project' | 'apiKey' | 'user'; projectId: string; value: string };

/** The hourly scope of a budget (and, for EACH_USER, of one of its users); null for a tag. */
export function scopeOf(
  b: { scope: string; projectId: string; scopeValue: string | null; modelScope?: string | null },
  user: string | null,
): HourlyScope | null {
  // The hourly roll-ups have no model: a budget on part of the catalog is not forecast (decisions §20).
  if (b.modelScope) return null;
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

export interface ForecastRequest {
  scope: HourlyScope | null;
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
  const hourly = new Map<number, Decimal>();
  let firstHour: number | null = null;
  if (r.scope) {
    const from = new Date(now.getTime() - (PROFILE_WEEKS * 168 + 1) * 3_600_000);
    const { rows } = await db.query<{ hour: Date; amount: string; first: Date | null }>(
      `SELECT h.hour, h.amount::text AS amount, NULL::timestamptz AS first FROM spend_hourly h
       WHERE h.dimension = $1 AND h.project_id = $2 AND h.value = $3 AND h.unit = $4::"Unit" AND h.hour >= $5 AND h.hour < date_trunc('hour', $6::timestamptz)
       UNION ALL
       SELECT NULL, NULL, min(f.hour) FROM spend_hourly f WHERE f.dimension = $1 AND f.project_id = $2 AND f.value = $3 AND f.unit = $4::"Unit" AND f.hour <= $6`,
      [r.scope.dimension, r.scope.projectId, r.scope.value, r.unit, from, now],
    );
    for (const row of rows) {
      if (row.hour) hourly.set(row.hour.getTime(), dec(row.amount));
      else firstHour = row.first ? row.first.getTime() : null;
    }
  }
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
