/** BudgetStatus.forecastSpend and runsOutAt (decisions §15): computed only when asked for, once per budget. */
import { Parent, ResolveField, Resolver } from '@nestjs/graphql';
import { Inject } from '@nestjs/common';
import type { BudgetStatus as Status } from '../budgets/budget-status.service.js';
import { Database, READS_DATABASE } from '../database/database.js';
import { BudgetStatus } from '../budgets/budget-status.types.js';
import { DecimalValue, DateTimeScalar } from '../graphql/scalars.js';
import type { Decimal } from '../pricing/money.js';
import type { Forecast } from './forecast.js';
import { forecastOfStatus } from './forecast-data.js';

@Resolver(() => BudgetStatus)
export class ForecastResolver {
  private readonly computed = new WeakMap<object, Promise<Forecast | null>>();

  constructor(@Inject(READS_DATABASE) private readonly db: Database) {}

  @ResolveField(() => DecimalValue, {
    nullable: true,
    description:
      "spend expected at the period's end: the same hours of recent weeks, scaled by the current level (docs/early-warning.md); null with too little history or for LIFETIME",
  })
  async forecastSpend(@Parent() b: Status): Promise<Decimal | null> {
    // a forecast, not money owed: 6 places are plenty
    return (await this.of(b))?.forecastSpend?.toDecimalPlaces(6) ?? null;
  }

  @ResolveField(() => DateTimeScalar, {
    nullable: true,
    description: "when spent + held reaches the limit at the forecast's rate; null if not within the period",
  })
  async runsOutAt(@Parent() b: Status): Promise<Date | null> {
    return (await this.of(b))?.runsOutAt ?? null;
  }

  private of(b: Status): Promise<Forecast | null> {
    let f = this.computed.get(b);
    if (!f) {
      f = forecastOfStatus(this.db, b);
      this.computed.set(b, f);
    }
    return f;
  }
}
