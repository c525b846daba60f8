import { actorOf, can, scopeProjects } from '../auth/access.js';
import { TargetLookups } from '../auth/target-lookups.js';
import { ChangesService } from '../audit/changes.service.js';
import { graphqlRefusal } from '../common/error.filter.js';
import { Callers, type CallContext } from '../auth/callers.js';
import { Args, Context, Field, ID, InputType, Int, Mutation, ObjectType, Query, Resolver } from '@nestjs/graphql';
import { requireUuid } from '../common/ids.js';
import { cleanText } from '../common/text.js';
import { LedgerService } from '../ledger/ledger.service.js';
import { dec } from '../pricing/money.js';
import { encodeCursor, MAX_PAGE, TaskReadsService } from './task-reads.service.js';
import { MoneyAmount, Task, TaskConnection, TaskResolutionEnum } from '../graphql/graphql.types.js';
import { DecimalValue, type DecimalText, DateTimeScalar } from '../graphql/scalars.js';

@InputType()
export class TaskFilterInput {
  @Field(() => [ID], { nullable: true }) projectIds?: string[];
  @Field(() => [String], { nullable: true }) models?: string[];
  @Field(() => [String], { nullable: true, description: 'submitting, processing, ready, failed, unknown, rejected' })
  statuses?: string[];
  @Field({ nullable: true }) needsReview?: boolean;
  @Field(() => DateTimeScalar, { nullable: true, description: 'accepted at or after' }) from?: Date;
  @Field(() => DateTimeScalar, { nullable: true, description: 'accepted before' }) to?: Date;
  @Field(() => [String], { nullable: true, description: 'key prefixes; (none): tasks without a key' })
  apiKeys?: string[];
  @Field(() => [String], { nullable: true, description: 'end users; (none): tasks without one' }) users?: string[];
  @Field(() => [String], { nullable: true, description: 'name=value: tasks carrying any of them' }) tags?: string[];
  @Field({ nullable: true, description: 'true: only tasks with a charge; false: only those without' })
  charged?: boolean;
  @Field(() => DateTimeScalar, {
    nullable: true,
    description:
      'money posted at or after (with postedTo): the tasks behind a spendReport row of the same range; taskTotals then counts as spendReport does (settlements and adjustments by when they were posted)',
  })
  postedFrom?: Date;
  @Field(() => DateTimeScalar, { nullable: true, description: 'money posted before (exclusive), with postedFrom' })
  postedTo?: Date;
}

@ObjectType()
export class TaskTotals {
  @Field(() => Int) tasks!: number;
  @Field(() => [MoneyAmount], {
    description:
      "the matching tasks' charges per unit (with postedFrom/postedTo: charges and adjustments posted in the range); credits and USD apart",
  })
  totals!: MoneyAmount[];
  @Field(() => [MoneyAmount], {
    description:
      'with postedFrom/postedTo and no filter but projects: adjustments posted in the range that belong to no task, per unit (a spendReport row of the project counts them, as "(adjustment)")',
  })
  withoutTask!: MoneyAmount[];
}

const MAX_FILTER_VALUES = 100;
/**
 * Hostile filters are refused before any SQL: at most 100 values of at most 200 characters per list
 * (a NUL in any of them is the operation guard's refusal, graphql/text-arguments.ts).
 */
function checkFilter(filter: TaskFilterInput | undefined): void {
  for (const [name, values] of Object.entries(filter ?? {})) {
    if (!Array.isArray(values)) continue;
    if (values.length > MAX_FILTER_VALUES)
      throw graphqlRefusal(`filter.${name}: at most ${MAX_FILTER_VALUES} values`, 'BAD_USER_INPUT');
    if (values.some((v) => typeof v !== 'string' || v.length > 200))
      throw graphqlRefusal(`filter.${name}: each value is text of at most 200 characters`, 'BAD_USER_INPUT');
  }
  for (const id of filter?.projectIds ?? []) requireUuid('filter.projectIds', id);
  if (filter?.from && filter.to && !(filter.to > filter.from))
    throw graphqlRefusal('filter.to: must be after filter.from', 'BAD_USER_INPUT');
  if (!filter?.postedFrom !== !filter?.postedTo)
    throw graphqlRefusal(
      'filter.postedFrom and filter.postedTo: give both (the range of a spendReport row)',
      'BAD_USER_INPUT',
    );
  if (filter?.postedFrom && filter.postedTo && !(filter.postedTo > filter.postedFrom))
    throw graphqlRefusal('filter.postedTo: must be after filter.postedFrom', 'BAD_USER_INPUT');
}

@Resolver(() => Task)
export class TasksResolver {
  constructor(
    private readonly query: TaskReadsService,
    private readonly callers: Callers,
    private readonly ledger: LedgerService,
    private readonly changes: ChangesService,
    lookups: TargetLookups,
  ) {
    lookups.register('task', (taskId) => this.query.projectOf(taskId));
  }

  @Query(() => Task, {
    nullable: true,
    description:
      "a task by its upstream taskId; null when missing or another project's; a 404 error when its month is archived",
  })
  async task(@Context() ctx: CallContext, @Args('taskId', { type: () => ID }) taskId: string) {
    const who = await this.callers.of(ctx);
    const task = await this.query.find(taskId);
    if (!task) await this.query.refuseIfArchived(taskId, scopeProjects(who, undefined));
    if (!task || !can(who, 'read', task.projectId)) return null;
    return task;
  }

  @Query(() => TaskConnection, { description: `newest first; first is at most ${MAX_PAGE}` })
  async tasks(
    @Context() ctx: CallContext,
    @Args('filter', { type: () => TaskFilterInput, nullable: true }) filter?: TaskFilterInput,
    @Args('first', { type: () => Int, defaultValue: 50 }) first = 50,
    @Args('after', { type: () => String, nullable: true }) after?: string,
  ) {
    const who = await this.callers.of(ctx);
    if (first < 1 || first > MAX_PAGE)
      throw graphqlRefusal(`first: must be between 1 and ${MAX_PAGE}`, 'BAD_USER_INPUT');
    checkFilter(filter);
    const projectIds = scopeProjects(who, filter?.projectIds);
    const page = await this.query.list(
      { ...(filter ?? {}), ...(projectIds ? { projectIds } : {}) },
      first,
      after ?? undefined,
    );
    const edges = page.tasks.map((node) => ({ cursor: encodeCursor(node.internalId), node }));
    return { edges, pageInfo: { hasNextPage: page.hasNextPage, endCursor: edges.at(-1)?.cursor ?? null } };
  }

  @Query(() => TaskTotals, {
    description:
      'how many tasks match the filter and their charges per unit; with postedFrom/postedTo, what a spendReport row of that range counts (the tasks behind a bar)',
  })
  async taskTotals(
    @Context() ctx: CallContext,
    @Args('filter', { type: () => TaskFilterInput, nullable: true }) filter?: TaskFilterInput,
  ) {
    const who = await this.callers.of(ctx);
    checkFilter(filter);
    const projectIds = scopeProjects(who, filter?.projectIds);
    return this.query.totals({ ...(filter ?? {}), ...(projectIds ? { projectIds } : {}) });
  }

  @Mutation(() => Task, {
    description:
      'resolves a task under review (unknown outcome, settled at its estimate, overrun, in flight too long): CHARGE `amount` or RELEASE, ' +
      "with a reason. CHARGE without an amount accepts what the task stands at: its settled charge (an overrun is the vendor's usage), " +
      'or its hold when it never settled; an amount below a settled charge is a credit (an adjustment). Appends ledger entries; nothing is edited. Once per task.',
  })
  async resolveTask(
    @Context() ctx: CallContext,
    @Args('taskId', { type: () => ID }) taskId: string,
    @Args('outcome', { type: () => TaskResolutionEnum }) outcome: TaskResolutionEnum,
    @Args('reason') reason: string,
    @Args('amount', {
      type: () => DecimalValue,
      nullable: true,
      description: 'CHARGE only; default: the settled charge, or the hold when unsettled',
    })
    amountText?: DecimalText,
  ) {
    const who = await this.callers.of(ctx);
    const why = cleanText('reason', reason, 1000, { multiline: true });
    const amount = amountText === undefined || amountText === null ? undefined : dec(amountText);
    if (outcome === TaskResolutionEnum.RELEASE && amount && !amount.isZero()) {
      throw graphqlRefusal('amount: RELEASE charges nothing; give an amount only with CHARGE', 'BAD_USER_INPUT');
    }
    if (amount?.isNegative())
      throw graphqlRefusal(
        'amount: must not be negative (a refund of a settled charge is RELEASE or a smaller CHARGE)',
        'BAD_USER_INPUT',
      );
    const task = await this.query.find(taskId);
    if (!task) {
      await this.query.refuseIfArchived(taskId, scopeProjects(who, undefined));
      throw graphqlRefusal(`task ${taskId} not found`, 'NOT_FOUND');
    }
    if (task.resolution)
      throw graphqlRefusal(
        `task ${taskId} was already resolved (${task.resolution.outcome} on ${task.resolution.resolvedAt.toISOString()})`,
        'CONFLICT',
      );
    // A task still in flight is under review only once flagged for its age: then it may be resolved.
    if (!task.needsReview) throw graphqlRefusal(`task ${taskId} is not under review: nothing to resolve`, 'CONFLICT');
    await this.changes.run(
      who,
      ctx.client,
      (delta: string) => ({
        action: 'task.resolve',
        targetKind: 'task',
        targetId: task.taskId,
        projectId: task.projectId,
        before: { status: task.status, held: task.held, charge: task.charge?.amount ?? null, net: task.net },
        after: { outcome, amount: amount?.toFixed() ?? null, reason: why, added: delta },
      }),
      () =>
        this.ledger.resolve(
          task.internalId,
          outcome,
          outcome === TaskResolutionEnum.CHARGE ? amount : undefined,
          why,
          actorOf(who).label,
        ),
    );
    return (await this.query.find(taskId))!;
  }
}
