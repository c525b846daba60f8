/**
 * Limits over GraphQL (decisions §20): set (create, or change the amount), list with their use
 * now, delete. Who may: the permission table (src/auth/permissions.ts, the budgets capability);
 * every change is audited (limit.set, limit.delete).
 */
import {
  Args,
  Context,
  Field,
  ID,
  Int,
  Mutation,
  ObjectType,
  Parent,
  Query,
  registerEnumType,
  ResolveField,
  Resolver,
} from '@nestjs/graphql';
import { ChangesService } from '../audit/changes.service.js';
import { actorOf } from '../auth/access.js';
import { Callers, type CallContext } from '../auth/callers.js';
import { TargetLookups } from '../auth/target-lookups.js';
import { ApiError } from '../common/api-error.js';
import { CAPPED, cappedInt } from '../common/counts.js';
import { requireUuid } from '../common/ids.js';
import { requirePageSize } from '../common/paging.js';
import { BudgetScopeEnum } from '../graphql/graphql.types.js';
import { DateTimeScalar } from '../graphql/scalars.js';
import { LimitsService, type LimitRow } from './limits.service.js';

export enum LimitKindEnum {
  REQUESTS_PER_MINUTE = 'REQUESTS_PER_MINUTE',
  TASKS_IN_FLIGHT = 'TASKS_IN_FLIGHT',
  TOKENS_PER_MINUTE = 'TOKENS_PER_MINUTE',
}
registerEnumType(LimitKindEnum, {
  name: 'LimitKind',
  description:
    'what a limit counts (decisions §20): requests admitted in a UTC minute, tasks in flight, or chat tokens in a UTC minute (estimated at admission, corrected at settlement)',
});

@ObjectType({ description: "a subject's use of a limit now: this minute's count, or its tasks in flight" })
export class LimitUseView {
  @Field({ description: "the end user of an EACH_USER limit; '' for every other scope" }) subject!: string;
  @Field(() => Int, { description: CAPPED('usedExact') })
  used!: number;
  @Field({ description: "the count exactly, in digits (a vendor's token count can pass GraphQL's Int)" })
  usedExact!: string;
}

@ObjectType({ description: "a limit on a project's traffic; a request past it is refused with 429 (decisions §20)" })
export class UsageLimitView {
  @Field(() => ID) id!: string;
  @Field(() => ID) projectId!: string;
  @Field(() => LimitKindEnum) kind!: LimitKindEnum;
  @Field(() => Int) amount!: number;
  @Field(() => BudgetScopeEnum) scope!: BudgetScopeEnum;
  @Field(() => String, { nullable: true, description: "API_KEY: the key's prefix; TAG: name=value; USER: the user" })
  scopeValue!: string | null;
  @Field(() => DateTimeScalar) createdAt!: Date;
  @Field() createdBy!: string;
}

const MAX_USE_PAGE = 200;

@Resolver(() => UsageLimitView)
export class LimitsResolver {
  constructor(
    private readonly service: LimitsService,
    private readonly callers: Callers,
    private readonly changes: ChangesService,
    lookups: TargetLookups,
  ) {
    lookups.register('limit', async (id) => {
      requireUuid('limitId', id);
      return (await this.service.get(id))?.projectId;
    });
  }

  @Query(() => [UsageLimitView], { description: "the project's limits" })
  async limits(@Args('projectId', { type: () => ID }) projectId: string) {
    requireUuid('projectId', projectId);
    return this.service.list(projectId);
  }

  @ResolveField(() => [LimitUseView], { description: 'its use now, the most used subjects first' })
  async use(@Parent() limit: LimitRow, @Args('first', { type: () => Int, defaultValue: 20 }) first: number) {
    requirePageSize(first, MAX_USE_PAGE);
    const use = await this.service.useNow(limit, first);
    return use.map((u) => ({ subject: u.subject, used: cappedInt(u.used), usedExact: u.used }));
  }

  @Mutation(() => ID, { description: "creates the project's limit of this kind and scope, or changes its amount" })
  async setLimit(
    @Context() ctx: CallContext,
    @Args('projectId', { type: () => ID }) projectId: string,
    @Args('kind', { type: () => LimitKindEnum }) kind: LimitKindEnum,
    @Args('amount', { type: () => Int, description: 'requests, tasks or tokens; a whole number from 1' })
    amount: number,
    @Args('scope', { type: () => BudgetScopeEnum, defaultValue: BudgetScopeEnum.PROJECT })
    scope: BudgetScopeEnum = BudgetScopeEnum.PROJECT,
    @Args('scopeValue', {
      type: () => String,
      nullable: true,
      description: "API_KEY: the key's public prefix; TAG: name=value; USER: the end user",
    })
    scopeValue?: string,
  ) {
    const who = await this.callers.of(ctx);
    requireUuid('projectId', projectId);
    const input = {
      projectId,
      kind,
      amount,
      scope,
      ...(scopeValue !== undefined && scopeValue !== null ? { scopeValue } : {}),
    };
    return this.changes
      .run(
        who,
        ctx.client,
        async (r: { id: string; before: unknown }) => ({
          action: 'limit.set',
          targetKind: 'limit',
          targetId: r.id,
          projectId,
          before: r.before ?? null,
          after: await this.service.get(r.id),
        }),
        () => this.service.set(input, actorOf(who).label),
      )
      .then((r) => r.id);
  }

  @Mutation(() => Boolean, { description: 'deletes a limit; the tasks it counted are no longer counted' })
  async deleteLimit(@Context() ctx: CallContext, @Args('limitId', { type: () => ID }) limitId: string) {
    const who = await this.callers.of(ctx);
    const before = await this.service.get(limitId);
    if (!before) throw ApiError.notFound(`limit ${limitId} not found`); // deleted since the guard's look-up
    return this.changes.run(
      who,
      ctx.client,
      {
        action: 'limit.delete',
        targetKind: 'limit',
        targetId: limitId,
        projectId: before.projectId,
        before,
        after: null,
      },
      () => this.service.remove(limitId),
    );
  }
}
