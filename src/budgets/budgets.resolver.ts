import { Args, Context, ID, Int, Mutation, Parent, Query, ResolveField, Resolver } from '@nestjs/graphql';
import { TargetLookups } from '../auth/target-lookups.js';
import { ChangesService } from '../audit/changes.service.js';
import { BudgetStatusService, type BudgetStatus as BudgetStatusView } from './budget-status.service.js';
import { BudgetsService } from './budgets.service.js';
import { parseUser } from '../attribution/attribution.js';
import { ApiError } from '../common/api-error.js';
import { requireUuid } from '../common/ids.js';
import { requirePageSize } from '../common/paging.js';
import { dec } from '../pricing/money.js';
import { BudgetEvent, UserBalanceConnection } from '../graphql/attribution.types.js';
import { Callers, type CallContext } from '../auth/callers.js';
import { BudgetScopeEnum, PeriodEnum, UnitEnum } from '../graphql/graphql.types.js';
import { BudgetStatus, ModelScopeEnum } from './budget-status.types.js';
import { DecimalValue, type DecimalText } from '../graphql/scalars.js';

const MAX_USERS_PAGE = 200;

@Resolver(() => BudgetStatus)
export class BudgetsResolver {
  constructor(
    private readonly budgets: BudgetsService,
    private readonly statuses: BudgetStatusService,
    private readonly callers: Callers,
    private readonly changes: ChangesService,
    lookups: TargetLookups,
  ) {
    lookups.register('budget', async (id) => {
      requireUuid('budgetId', id);
      return (await this.budgets.get(id))?.projectId;
    });
  }

  @Query(() => [BudgetStatus])
  async budgetStatus(@Args('projectId', { type: () => ID }) projectId: string) {
    requireUuid('projectId', projectId);
    return this.statuses.status(projectId);
  }

  @ResolveField(() => UserBalanceConnection, {
    description: "EACH_USER: every user's own balance in the current window, by user id",
  })
  async users(
    @Parent() budget: BudgetStatusView,
    @Args('first', { type: () => Int, defaultValue: 50 }) first: number,
    @Args('after', { type: () => String, nullable: true }) after?: string,
  ) {
    requirePageSize(first, MAX_USERS_PAGE);
    if (budget.scope !== 'EACH_USER') return { edges: [], pageInfo: { hasNextPage: false, endCursor: null } };
    const cursor = after === undefined || after === null ? undefined : userCursor(after);
    const page = await this.statuses.users(budget.budgetId, first, cursor);
    const edges = page.users.map((node) => ({ cursor: Buffer.from(node.user).toString('base64url'), node }));
    return { edges, pageInfo: { hasNextPage: page.hasNextPage, endCursor: edges.at(-1)?.cursor ?? null } };
  }

  @ResolveField(() => [BudgetEvent], {
    description: "its current window's thresholds crossed and refusals (the first per user), newest first",
  })
  async events(
    @Parent() budget: BudgetStatusView,
    @Args('first', { type: () => Int, defaultValue: 10 }) first: number,
  ) {
    requirePageSize(first, MAX_USERS_PAGE);
    return this.statuses.events(budget, first);
  }

  @Mutation(() => ID, {
    description: "creates the project's budget for (unit, period, scope, model scope), or changes its limit",
  })
  async setBudget(
    @Context() ctx: CallContext,
    @Args('projectId', { type: () => ID }) projectId: string,
    @Args('unit', { type: () => UnitEnum }) unit: UnitEnum,
    @Args('limit', { type: () => DecimalValue }) limit: DecimalText,
    @Args('period', { type: () => PeriodEnum }) period: PeriodEnum,
    @Args('hard') hard: boolean,
    @Args('thresholds', { type: () => [Int], nullable: true }) thresholds?: number[],
    @Args('scope', { type: () => BudgetScopeEnum, defaultValue: BudgetScopeEnum.PROJECT })
    scope: BudgetScopeEnum = BudgetScopeEnum.PROJECT,
    @Args('scopeValue', {
      type: () => String,
      nullable: true,
      description: "API_KEY: the key's public prefix; TAG: name=value; USER: the end user",
    })
    scopeValue?: string,
    @Args('modelScope', {
      type: () => ModelScopeEnum,
      nullable: true,
      description: 'with any scope: only tasks of one model, family or kind count (decisions §20)',
    })
    modelScope?: ModelScopeEnum,
    @Args('modelValue', {
      type: () => String,
      nullable: true,
      description: 'the model id, family or kind (chat, image, video)',
    })
    modelValue?: string,
  ) {
    const who = await this.callers.of(ctx);
    requireUuid('projectId', projectId);
    const input = {
      projectId,
      unit,
      limit: dec(limit),
      period,
      hard,
      scope,
      ...(thresholds ? { thresholds } : {}),
      ...(scopeValue !== undefined && scopeValue !== null ? { scopeValue } : {}),
      ...(modelScope ? { modelScope } : {}),
      ...(modelValue !== undefined && modelValue !== null ? { modelValue } : {}),
    };
    return this.changes
      .run(
        who,
        ctx.client,
        async (r: { id: string; before: unknown }) => ({
          action: 'budget.set',
          targetKind: 'budget',
          targetId: r.id,
          projectId,
          before: r.before ?? null,
          after: await this.budgets.get(r.id),
        }),
        () => this.budgets.set(input),
      )
      .then((r) => r.id);
  }

  @Mutation(() => Boolean, { description: "changes a budget's limit, kind or thresholds" })
  async updateBudget(
    @Context() ctx: CallContext,
    @Args('budgetId', { type: () => ID }) budgetId: string,
    @Args('limit', { type: () => DecimalValue, nullable: true }) limit?: DecimalText,
    @Args('hard', { nullable: true }) hard?: boolean,
    @Args('thresholds', { type: () => [Int], nullable: true }) thresholds?: number[],
  ) {
    const who = await this.callers.of(ctx);
    const before = await this.budgets.get(budgetId);
    if (!before) throw ApiError.notFound(`budget ${budgetId} not found`); // deleted since the guard's look-up
    return this.changes.run(
      who,
      ctx.client,
      async () => ({
        action: 'budget.update',
        targetKind: 'budget',
        targetId: budgetId,
        projectId: before.projectId,
        before,
        after: await this.budgets.get(budgetId),
      }),
      () =>
        this.budgets.update(budgetId, {
          ...(limit ? { limit: dec(limit) } : {}),
          ...(hard !== undefined && hard !== null ? { hard } : {}),
          ...(thresholds ? { thresholds } : {}),
        }),
    );
  }

  @Mutation(() => Boolean)
  async deleteBudget(@Context() ctx: CallContext, @Args('budgetId', { type: () => ID }) budgetId: string) {
    const who = await this.callers.of(ctx);
    const before = await this.budgets.get(budgetId);
    if (!before) throw ApiError.notFound(`budget ${budgetId} not found`); // deleted since the guard's look-up
    return this.changes.run(
      who,
      ctx.client,
      {
        action: 'budget.delete',
        targetKind: 'budget',
        targetId: budgetId,
        projectId: before.projectId,
        before,
        after: null,
      },
      () => this.budgets.remove(budgetId),
    );
  }
}

/** The end user a previous page's cursor names (base64url); anything else is not a cursor of this list. */
function userCursor(after: string): string {
  try {
    return parseUser(Buffer.from(after, 'base64url').toString(), 'after')!;
  } catch {
    throw ApiError.badRequest('after: is not a cursor of this list');
  }
}
