/**
 * Early warning's reads (decisions §15), of the projects a caller may read (undefined: every
 * project): budgets at risk (at 80 % of the limit or more, or forecast past it this period) and the
 * latest spend anomalies (the spend.anomaly events the hourly check emitted).
 */
import { Inject, Injectable } from '@nestjs/common';
import { Database, READS_DATABASE } from '../database/database.js';
import { budgetForecasts } from './budget-forecasts.js';
import { dec, type Unit } from '../pricing/money.js';

export interface BudgetAtRiskView {
  budgetId: string;
  projectId: string;
  projectName: string;
  scope: string;
  scopeValue: string | null;
  modelScope: string | null;
  modelValue: string | null;
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

@Injectable()
export class EarlyWarningService {
  constructor(@Inject(READS_DATABASE) private readonly db: Database) {}

  /** Soonest to run out first, then the fullest; at most 200 budgets are looked at. */
  async budgetsAtRisk(projects: string[] | undefined): Promise<BudgetAtRiskView[]> {
    const out: BudgetAtRiskView[] = [];
    for (const b of await budgetForecasts(this.db, new Date(), { projects, first: 200 })) {
      const limit = dec(b.limit);
      const passes = !!b.forecast?.forecastSpend && b.forecast.forecastSpend.gt(limit);
      if (!passes && !(limit.gt(0) && b.used.gte(limit.times('0.8')))) continue;
      out.push({
        budgetId: b.id,
        projectId: b.projectId,
        projectName: b.project,
        scope: b.scope,
        scopeValue: b.scopeValue,
        modelScope: b.modelScope,
        modelValue: b.modelValue,
        unit: b.unit,
        period: b.period,
        limit: b.limit,
        used: b.used.toFixed(),
        usedPercent: limit.gt(0) ? b.used.div(limit).times(100).toDecimalPlaces(1, 1).toFixed(1) : '100.0',
        forecastSpend: b.forecast?.forecastSpend ? b.forecast.forecastSpend.toDecimalPlaces(6).toFixed() : null,
        runsOutAt: b.forecast?.runsOutAt ?? null,
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
