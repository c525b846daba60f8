/**
 * What the console's overview shows of early warning (decisions §15): budgets at risk (forecast
 * past the limit, with the date they run out) and the latest spend anomalies, of the projects the
 * caller may read.
 */
import { Inject } from '@nestjs/common';
import { Args, Context, Field, ID, Int, ObjectType, Query, Resolver } from '@nestjs/graphql';
import { scopeProjects } from '../auth/access.js';
import { Database, READS_DATABASE } from '../database/database.js';
import { forecastFrom, scopeOf } from '../forecast/forecast-data.js';
import { UnitEnum } from '../graphql/graphql.types.js';
import { Callers, type CallContext } from '../auth/callers.js';
import { DecimalValue, DateTimeScalar } from '../graphql/scalars.js';
import { requirePageSize } from '../common/paging.js';
import { dec } from '../pricing/money.js';

@ObjectType({ description: 'a budget whose forecast passes its limit in the current period' })
export class BudgetAtRisk {
  @Field(() => ID) budgetId!: string;
  @Field(() => ID) projectId!: string;
  @Field() projectName!: string;
  @Field() scope!: string;
  @Field(() => String, { nullable: true }) scopeValue!: string | null;
  @Field(() => UnitEnum) unit!: UnitEnum;
  @Field() period!: string;
  @Field(() => DecimalValue) limit!: string;
  @Field(() => DecimalValue) used!: string;
  @Field(() => DecimalValue, { nullable: true, description: 'null when the budget has too little history to forecast' }) forecastSpend!: string | null;
  @Field({ description: 'spent and held as a share of the limit, one decimal ("99.8")' }) usedPercent!: string;
  @Field(() => DateTimeScalar, { nullable: true }) runsOutAt!: Date | null;
}

@ObjectType({ description: 'an hour whose spend passed its scope\'s own baseline (a spend.anomaly event)' })
export class SpendAnomaly {
  @Field(() => ID) eventId!: string;
  @Field(() => ID) projectId!: string;
  @Field() projectName!: string;
  @Field({ description: 'project | apiKey | user' }) scope!: string;
  @Field(() => String, { nullable: true }) scopeValue!: string | null;
  @Field(() => DateTimeScalar) hour!: Date;
  @Field(() => UnitEnum) unit!: UnitEnum;
  @Field(() => DecimalValue) spend!: string;
  @Field(() => DecimalValue, { description: "the median of the same hour over the last 14 days" }) baseline!: string;
  @Field() multiple!: string;
}

interface BudgetRow {
  id: string; project_id: string; project: string; scope: string; scope_value: string | null; unit: UnitEnum; period: string; lim: string;
  period_start: Date; period_end: Date; spent: string; held: string;
}

@Resolver()
export class EarlyWarningResolver {
  constructor(
    @Inject(READS_DATABASE) private readonly db: Database,
    private readonly callers: Callers,
  ) {}

  @Query(() => [BudgetAtRisk], { description: 'budgets at 80 % of their limit or more, or whose forecast passes it this period; soonest to run out first, then the fullest' })
  async budgetsAtRisk(@Context() ctx: CallContext) {
    const projects = scopeProjects(await this.callers.of(ctx), undefined);
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
    const out: BudgetAtRisk[] = [];
    for (const r of rows) {
      const f = await forecastFrom(this.db, {
        scope: scopeOf({ scope: r.scope, projectId: r.project_id, scopeValue: r.scope_value }, null),
        unit: r.unit, periodStart: r.period_start, periodEnd: r.period_end, spent: dec(r.spent), held: dec(r.held), limit: dec(r.lim), now,
      });
      const used = dec(r.spent).plus(dec(r.held));
      const limit = dec(r.lim);
      const passes = !!f?.forecastSpend && f.forecastSpend.gt(limit);
      if (!passes && !(limit.gt(0) && used.gte(limit.times('0.8')))) continue;
      out.push({
        budgetId: r.id, projectId: r.project_id, projectName: r.project, scope: r.scope, scopeValue: r.scope_value, unit: r.unit, period: r.period, limit: r.lim,
        used: used.toFixed(), usedPercent: limit.gt(0) ? used.div(limit).times(100).toDecimalPlaces(1, 1).toFixed(1) : '100.0',
        forecastSpend: f?.forecastSpend ? f.forecastSpend.toDecimalPlaces(6).toFixed() : null, runsOutAt: f?.runsOutAt ?? null,
      });
    }
    return out.sort((a, b) => (a.runsOutAt?.getTime() ?? Infinity) - (b.runsOutAt?.getTime() ?? Infinity) || dec(b.usedPercent).comparedTo(dec(a.usedPercent)));
  }

  @Query(() => [SpendAnomaly], { description: 'the latest spend anomalies, newest first' })
  async anomalies(@Context() ctx: CallContext, @Args('first', { type: () => Int, defaultValue: 10 }) first: number) {
    requirePageSize(first, 100);
    const projects = scopeProjects(await this.callers.of(ctx), undefined);
    const { rows } = await this.db.query<{ id: string; payload: string }>(
      `SELECT id, payload FROM outbox_event WHERE type = 'spend.anomaly' AND ($1::uuid[] IS NULL OR project_id = ANY($1)) ORDER BY created_at DESC, id LIMIT $2`,
      [projects ?? null, first],
    );
    return rows.map((r) => {
      const d = (JSON.parse(r.payload) as { data: { project: { id: string; name: string }; scope: { kind: string; value: string | null }; hour: string; unit: UnitEnum; spend: string; baseline: { median: string }; multiple: string } }).data;
      return { eventId: r.id, projectId: d.project.id, projectName: d.project.name, scope: d.scope.kind, scopeValue: d.scope.value, hour: new Date(d.hour), unit: d.unit, spend: d.spend, baseline: d.baseline.median, multiple: d.multiple };
    });
  }
}
