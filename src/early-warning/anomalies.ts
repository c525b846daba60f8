/**
 * `spend.anomaly` (decisions §15): a project's, API key's or end user's spend in one hour against
 * its own baseline, the same hour of the day over the previous BASELINE_DAYS days, from
 * spend_hourly (never raw tasks). An hour is anomalous when its spend passes the unit's floor, a
 * multiple of the baseline's median, and the median plus K robust standard deviations
 * (1.4826 × MAD). A scope needs a baseline first: spend in at least MIN_ACTIVE_DAYS of those hours,
 * so a new key or user is not an anomaly by being new. Only scopes over the floor this hour, and
 * over the multiple of the lesser of the same hour yesterday and a week ago, get the full baseline
 * (a spike that recurs at the same hour is a habit, not an anomaly), at most MAX_CANDIDATES of them. Each hour is
 * evaluated once (the
 * anomaly_hour row, claimed in the same transaction) and each event is once per scope and hour
 * (the outbox's cause), however many instances evaluate.
 */
import type { Unit } from '../pricing/money.js';
import type { Database } from '../database/database.js';

export const BASELINE_DAYS = 14;
export const MIN_ACTIVE_DAYS = 3;
export const MAD_K = 5;
/**
 * At most this many scopes an hour get the full baseline, the largest jumps first: an hour in which
 * more than that jumped at once is one incident, announced by its largest jumps, not 100,000 emails.
 */
export const MAX_CANDIDATES = 1_000;

export interface AnomalySettings {
  multiple: number;
  floorUsd: string;
  floorCredits: string;
}

export interface Anomaly {
  projectId: string;
  projectName: string;
  dimension: 'project' | 'apiKey' | 'user';
  value: string;
  unit: Unit;
  spend: string;
  median: string;
  mad: string;
  multiple: string;
}

/** The anomalous scopes of one hour (no side effects). */
export async function anomaliesOf(db: Pick<Database, 'query'>, hour: Date, s: AnomalySettings): Promise<Anomaly[]> {
  const { rows } = await db.query<Anomaly>(ANOMALY_SQL, anomalyParams(hour, s));
  return rows;
}

/** The parameters of ANOMALY_SQL for one hour. */
export function anomalyParams(hour: Date, s: AnomalySettings): unknown[] {
  const baseline = Array.from({ length: BASELINE_DAYS }, (_, i) => new Date(hour.getTime() - (i + 1) * 86_400_000));
  return [hour, baseline, s.floorUsd, s.floorCredits, s.multiple, MIN_ACTIVE_DAYS, MAD_K, MAX_CANDIDATES];
}

export const ANOMALY_SQL = `WITH over AS (
       SELECT h.dimension, h.project_id, h.value, h.unit, h.amount FROM spend_hourly h
       WHERE h.hour = $1 AND h.amount > CASE h.unit WHEN 'USD' THEN $3::numeric ELSE $4::numeric END
         AND (h.dimension = 'project' OR h.value <> '') -- tasks without a key or an end user are no one's
     ), cur AS (
       -- Candidates: above the multiple of the lesser of the same hour yesterday and a week ago. A
       -- scope spending as usual stops here; at most MAX_CANDIDATES, the largest jumps first, get the
       -- full baseline (joins on the same hour's key order, so 100,000 scopes are two merge joins).
       SELECT o.* FROM over o
       LEFT JOIN spend_hourly y ON y.hour = $1::timestamptz - interval '1 day' AND y.dimension = o.dimension AND y.project_id = o.project_id AND y.value = o.value AND y.unit = o.unit
       LEFT JOIN spend_hourly w ON w.hour = $1::timestamptz - interval '7 days' AND w.dimension = o.dimension AND w.project_id = o.project_id AND w.value = o.value AND w.unit = o.unit
       WHERE o.amount > $5::numeric * least(coalesce(y.amount, 0), coalesce(w.amount, 0))
       ORDER BY o.amount / greatest(least(coalesce(y.amount, 0), coalesce(w.amount, 0)), 0.000001) DESC LIMIT $8
     ), samples AS (
       -- One primary-key look-up per scope and day (a join would let the planner read the whole table).
       SELECT c.dimension, c.project_id, c.value, c.unit,
              coalesce((SELECT b.amount FROM spend_hourly b WHERE b.hour = d.hour AND b.dimension = c.dimension AND b.project_id = c.project_id
                                                              AND b.value = c.value AND b.unit = c.unit), 0) AS amount
       FROM cur c CROSS JOIN unnest($2::timestamptz[]) d(hour)
     ), med AS (
       SELECT dimension, project_id, value, unit, percentile_cont(0.5) WITHIN GROUP (ORDER BY amount) AS median, count(*) FILTER (WHERE amount > 0) AS active
       FROM samples GROUP BY dimension, project_id, value, unit
     ), mad AS (
       SELECT s.dimension, s.project_id, s.value, s.unit, percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(s.amount - m.median)) AS mad
       FROM samples s JOIN med m USING (dimension, project_id, value, unit) GROUP BY s.dimension, s.project_id, s.value, s.unit
     )
     SELECT c.project_id::text AS "projectId", p.name AS "projectName", c.dimension, c.value, c.unit::text AS unit, c.amount::text AS spend,
            round(m.median::numeric, 6)::text AS median, round(d.mad::numeric, 6)::text AS mad, round(c.amount / m.median::numeric, 2)::text AS multiple
     FROM cur c JOIN med m USING (dimension, project_id, value, unit) JOIN mad d USING (dimension, project_id, value, unit) JOIN project p ON p.id = c.project_id
     WHERE m.active >= $6 AND m.median > 0 AND c.amount > $5::numeric * m.median::numeric
       AND c.amount > m.median::numeric + $7::numeric * 1.4826 * d.mad::numeric
     ORDER BY c.project_id, c.dimension, c.value, c.unit`;

/**
 * Evaluates `hour` once: claims it (anomaly_hour), emits one spend.anomaly per anomalous scope,
 * records how long it took. Returns null when another instance has evaluated it.
 */
export async function evaluateHour(
  db: Database,
  hour: Date,
  s: AnomalySettings,
): Promise<{ scopes: number; anomalies: Anomaly[]; millis: number } | null> {
  return db.transaction(async (tx) => {
    const claimed = await tx.query(
      `INSERT INTO anomaly_hour (hour, scopes, anomalies, millis) VALUES ($1, 0, 0, 0) ON CONFLICT (hour) DO NOTHING RETURNING hour`,
      [hour],
    );
    if (claimed.rowCount === 0) return null;
    const started = performance.now();
    const anomalies = await anomaliesOf(db, hour, s);
    const { rows } = await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM spend_hourly WHERE hour = $1', [
      hour,
    ]);
    for (const a of anomalies) {
      const data = {
        project: { id: a.projectId, name: a.projectName },
        scope: { kind: a.dimension, value: a.dimension === 'project' ? null : a.value || '(none)' },
        hour: hour.toISOString(),
        unit: a.unit,
        spend: a.spend,
        baseline: { median: a.median, mad: a.mad, days: BASELINE_DAYS },
        multiple: a.multiple,
      };
      await tx.query(`SELECT spendgate_emit('spend.anomaly', $1, $2, $3::jsonb)`, [
        a.projectId,
        `anomaly:${a.dimension}:${a.projectId}:${a.value}:${a.unit}:${hour.toISOString()}`,
        JSON.stringify(data),
      ]);
    }
    const millis = Math.round(performance.now() - started);
    await tx.query('UPDATE anomaly_hour SET scopes = $2, anomalies = $3, millis = $4 WHERE hour = $1', [
      hour,
      rows[0]!.n,
      anomalies.length,
      millis,
    ]);
    return { scopes: rows[0]!.n, anomalies, millis };
  });
}
