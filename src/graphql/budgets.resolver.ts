import { assertAdmin, assertCanRead } from '../auth/access.js';
import { requireUuid } from '../common/ids.js';
import { Principals, type GraphqlContext } from './graphql-auth.js';
import { Args, Context, ID, Int, Mutation, Query, Resolver } from '@nestjs/graphql';
import { BudgetsService } from '../budgets/budgets.service.js';
import type { Decimal } from '../pricing/money.js';
import { BudgetStatus, PeriodEnum, UnitEnum } from './graphql.types.js';
import { DecimalValue } from './scalars.js';

@Resolver(() => BudgetStatus)
export class BudgetsResolver {
  constructor(
    private readonly budgets: BudgetsService,
    private readonly principals: Principals,
  ) {}

  @Query(() => [BudgetStatus])
  async budgetStatus(@Context() ctx: GraphqlContext, @Args('projectId', { type: () => ID }) projectId: string) {
    const who = await this.principals.of(ctx);
    assertCanRead(who, projectId);
    requireUuid('projectId', projectId);
    return this.budgets.status(projectId);
  }

  @Mutation(() => ID, { description: "creates the project's budget for (unit, period), or changes its limit" })
  async setBudget(
    @Context() ctx: GraphqlContext,
    @Args('projectId', { type: () => ID }) projectId: string,
    @Args('unit', { type: () => UnitEnum }) unit: UnitEnum,
    @Args('limit', { type: () => DecimalValue }) limit: Decimal,
    @Args('period', { type: () => PeriodEnum }) period: PeriodEnum,
    @Args('hard') hard: boolean,
    @Args('thresholds', { type: () => [Int], nullable: true }) thresholds?: number[],
  ) {
    assertAdmin(await this.principals.of(ctx), 'setBudget');
    requireUuid('projectId', projectId);
    return this.budgets.set({ projectId, unit, limit, period, hard, ...(thresholds ? { thresholds } : {}) });
  }

  @Mutation(() => Boolean, { description: "changes a budget's limit, kind or thresholds" })
  async updateBudget(
    @Context() ctx: GraphqlContext,
    @Args('budgetId', { type: () => ID }) budgetId: string,
    @Args('limit', { type: () => DecimalValue, nullable: true }) limit?: Decimal,
    @Args('hard', { nullable: true }) hard?: boolean,
    @Args('thresholds', { type: () => [Int], nullable: true }) thresholds?: number[],
  ) {
    assertAdmin(await this.principals.of(ctx), 'updateBudget');
    requireUuid('budgetId', budgetId);
    return this.budgets.update(budgetId, { ...(limit ? { limit } : {}), ...(hard !== undefined && hard !== null ? { hard } : {}), ...(thresholds ? { thresholds } : {}) });
  }

  @Mutation(() => Boolean)
  async deleteBudget(@Context() ctx: GraphqlContext, @Args('budgetId', { type: () => ID }) budgetId: string) {
    assertAdmin(await this.principals.of(ctx), 'deleteBudget');
    requireUuid('budgetId', budgetId);
    return this.budgets.remove(budgetId);
  }
}
