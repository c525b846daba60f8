/**
 * What the console's overview shows of early warning (decisions §15): budgets at risk (forecast
 * past the limit, with the date they run out) and the latest spend anomalies, of the projects the
 * caller may read.
 */
import { Args, Context, Field, ID, Int, ObjectType, Query, Resolver } from '@nestjs/graphql';
import { scopeProjects } from '../auth/access.js';
import { EarlyWarningService } from './early-warning.service.js';
import { UnitEnum } from '../graphql/graphql.types.js';
import { Callers, type CallContext } from '../auth/callers.js';
import { DecimalValue, DateTimeScalar } from '../graphql/scalars.js';
import { requirePageSize } from '../common/paging.js';

@ObjectType({ description: 'a budget whose forecast passes its limit in the current period' })
export class BudgetAtRisk {
  @Field(() => ID) budgetId!: string;
  @Field(() => ID) projectId!: string;
  @Field() projectName!: string;
  @Field() scope!: string;
  @Field(() => String, { nullable: true }) scopeValue!: string | null;
  @Field(() => String, { nullable: true, description: 'MODEL, FAMILY or KIND for a budget on part of the catalog' })
  modelScope!: string | null;
  @Field(() => String, { nullable: true }) modelValue!: string | null;
  @Field(() => UnitEnum) unit!: UnitEnum;
  @Field() period!: string;
  @Field(() => DecimalValue) limit!: string;
  @Field(() => DecimalValue) used!: string;
  @Field(() => DecimalValue, { nullable: true, description: 'null when the budget has too little history to forecast' })
  forecastSpend!: string | null;
  @Field({ description: 'spent and held as a share of the limit, one decimal ("99.8")' }) usedPercent!: string;
  @Field(() => DateTimeScalar, { nullable: true }) runsOutAt!: Date | null;
}

@ObjectType({ description: "an hour whose spend passed its scope's own baseline (a spend.anomaly event)" })
export class SpendAnomaly {
  @Field(() => ID) eventId!: string;
  @Field(() => ID) projectId!: string;
  @Field() projectName!: string;
  @Field({ description: 'project | apiKey | user' }) scope!: string;
  @Field(() => String, { nullable: true }) scopeValue!: string | null;
  @Field(() => DateTimeScalar) hour!: Date;
  @Field(() => UnitEnum) unit!: UnitEnum;
  @Field(() => DecimalValue) spend!: string;
  @Field(() => DecimalValue, { description: 'the median of the same hour over the last 14 days' }) baseline!: string;
  @Field() multiple!: string;
}

@Resolver()
export class EarlyWarningResolver {
  constructor(
    private readonly earlyWarning: EarlyWarningService,
    private readonly callers: Callers,
  ) {}

  @Query(() => [BudgetAtRisk], {
    description:
      'budgets at 80 % of their limit or more, or whose forecast passes it this period; soonest to run out first, then the fullest',
  })
  async budgetsAtRisk(@Context() ctx: CallContext) {
    return this.earlyWarning.budgetsAtRisk(scopeProjects(await this.callers.of(ctx), undefined));
  }

  @Query(() => [SpendAnomaly], { description: 'the latest spend anomalies, newest first' })
  async anomalies(@Context() ctx: CallContext, @Args('first', { type: () => Int, defaultValue: 10 }) first: number) {
    requirePageSize(first, 100);
    return this.earlyWarning.anomalies(scopeProjects(await this.callers.of(ctx), undefined), first);
  }
}
