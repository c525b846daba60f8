/**
 * Early warning's reads (decisions §15), of the projects a caller may read (undefined: every
 * project): budgets at risk (at 80 % of the limit or more, or forecast past it this period) and the
 * latest spend anomalies (the spend.anomaly events the hourly check emitted).
 */
import { Inject, Injectable } from '@nestjs/common';
import { Database, READS_DATABASE } from '../database/database.js';
import { forecastFrom, scopeOf } from '../forecast/forecast-data.js';
import { dec, type Unit } from '../pricing/money.js';

export interface BudgetAtRiskView {
  budgetId: string;
  projectId: string;
  projectName: string;
  scope: string;
  scopeValue: string | null;
  unit: Unit;
  period: string;
  limit: string;
  used: string;
  forecastSpend: string | null;
  usedPercent: string;
  runsOutAt: Date | null;
}

export interface SpendAnomalyView {
  eventId: string;
  projectId: string;
  projectName: string;
  scope: string;
  scopeValue: string | null;
  hour: Date;
  unit: Unit;
  spend: string;
  baseline: string;
  multiple: string;
}

interface BudgetRow {
  id: string;
  project_id: string;
  project: string;
  scope: string;
  scope_value: string | null;
  unit: Unit;
  period: string;
  lim: string;
  period_start: Date;
  period_end: Date;
  spent: string;
  held: string;
}

@Injectable()
export class EarlyWarningService {
  constructor(@Inject(READS_DATABASE) private readonly db: Database) {}

  /** Soonest to run out first, then the fullest; at most 200 budgets are looked at. */
  async budgetsAtRisk(projects: string[] | undefined): Promise<BudgetAtRiskView[]> {
    const now = new Date();
    const { rows } = await this.db.query<BudgetRow>(
      `SELECT b.id, b.project_id::text, p.name AS project, b.scope::text, coalesce(b.scope_value, k.prefix) AS scope_value, b.unit, b.period::text,
              b."limit"::text AS lim, w.period_start, w.period_end, l.spent::text, l.held::text
       FROM budget b JOIN project p ON p.id = b.project_id LEFT JOIN api_key k ON k.id = b.scope_key_id
       CROSS JOIN LATERAL spendgate_period_window(b.period, $1) w
       CROSS JOIN LATERAL spendgate_budget_balance(b.id, '', w.period_start, w.period_end) l
       WHERE b.deleted_at IS NULL AND b.period <> 'LIFETIME' AND b.scope <> 'EACH_USER' AND ($2::uuid[] IS NULL OR b.project_id = ANY($2))
       ORDER BY p.name, b.created_at LIMIT 200`,
      [now, projects ?? null],
    );
    const out: BudgetAtRiskView[] = [];
    for (const r of rows) {
      const f = await forecastFrom(this.db, {
        scope: scopeOf({ scope: r.scope, projectId: r.project_id, scopeValue: r.scope_value }, null),
        unit: r.unit,
        periodStart: r.period_start,
        periodEnd: r.period_end,
        spent: dec(r.spent),
        held: dec(r.held),
        limit: dec(r.lim),
        now,
      });
      const used = dec(r.spent).plus(dec(r.held));
      const limit = dec(r.lim);
      const passes = !!f?.forecastSpend && f.forecastSpend.gt(limit);
      if (!passes && !(limit.gt(0) && used.gte(limit.times('0.8')))) continue;
      out.push({
        budgetId: r.id,
        projectId: r.project_id,
        projectName: r.project,
        scope: r.scope,
        scopeValue: r.scope_value,
        unit: r.unit,
        period: r.period,
        limit: r.lim,
        used: used.toFixed(),
        usedPercent: limit.gt(0) ? used.div(limit).times(100).toDecimalPlaces(1, 1).toFixed(1) : '100.0',
        forecastSpend: f?.forecastSpend ? f.forecastSpend.toDecimalPlaces(6).toFixed() : null,
        runsOutAt: f?.runsOutAt ?? null,
      });
    }
    return out.sort(
      (a, b) =>
        (a.runsOutAt?.getTime() ?? Infinity) - (b.runsOutAt?.getTime() ?? Infinity) ||
        dec(b.usedPercent).comparedTo(dec(a.usedPercent)),
    );
  }

  /** Newest first. */
  async anomalies(projects: string[] | undefined, first: number): Promise<SpendAnomalyView[]> {
    const { rows } = await this.db.query<{ id: string; payload: string }>(
      `SELECT id, payload FROM outbox_event WHERE type = 'spend.anomaly' AND ($1::uuid[] IS NULL OR project_id = ANY($1)) ORDER BY created_at DESC, id LIMIT $2`,
      [projects ?? null, first],
    );
    return rows.map((r) => {
      const d = (
        JSON.parse(r.payload) as {
          data: {
            project: { id: string; name: string };
            scope: { kind: string; value: string | null };
            hour: string;
            unit: Unit;
            spend: string;
            baseline: { median: string };
            multiple: string;
          };
        }
      ).data;
      return {
        eventId: r.id,
        projectId: d.project.id,
        projectName: d.project.name,
        scope: d.scope.kind,
        scopeValue: d.scope.value,
        hour: new Date(d.hour),
        unit: d.unit,
        spend: d.spend,
        baseline: d.baseline.median,
        multiple: d.multiple,
      };
    });
  }
}
