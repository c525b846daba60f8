import { can, requireOnTarget, scopeProjects } from '../auth/access.js';
import { ChangesService } from '../audit/changes.service.js';
import { graphqlRefusal } from '../common/error.filter.js';
import { Principals, type GraphqlContext } from './graphql-auth.js';
import { Args, Context, Field, GraphQLISODateTime, ID, InputType, Int, Mutation, Query, Resolver } from '@nestjs/graphql';
import { cleanText } from '../common/text.js';
import { LedgerService } from '../ledger/ledger.service.js';
import type { Decimal } from '../pricing/money.js';
import { encodeCursor, MAX_PAGE, TaskReadsService } from './task-reads.service.js';
import { Task, TaskConnection, TaskResolutionEnum } from './graphql.types.js';
import { DecimalValue } from './scalars.js';

@InputType()
export class TaskFilterInput {
  @Field(() => [ID], { nullable: true }) projectIds?: string[];
  @Field(() => [String], { nullable: true }) models?: string[];
  @Field(() => [String], { nullable: true, description: 'submitting, processing, ready, failed, unknown, rejected' }) statuses?: string[];
  @Field({ nullable: true }) needsReview?: boolean;
  @Field(() => GraphQLISODateTime, { nullable: true, description: 'accepted at or after' }) from?: Date;
  @Field(() => GraphQLISODateTime, { nullable: true, description: 'accepted before' }) to?: Date;
}

@Resolver(() => Task)
export class TasksResolver {
  constructor(
    private readonly query: TaskReadsService,
    private readonly principals: Principals,
    private readonly ledger: LedgerService,
    private readonly changes: ChangesService,
  ) {}

  @Query(() => Task, { nullable: true, description: "a task by its upstream taskId; null when missing or another project's" })
  async task(@Context() ctx: GraphqlContext, @Args('taskId', { type: () => ID }) taskId: string) {
    const who = await this.principals.of(ctx);
    const task = await this.query.find(taskId);
    if (!task || !can(who, 'read', task.projectId)) return null;
    return task;
  }

  @Query(() => TaskConnection, { description: `newest first; first is at most ${MAX_PAGE}` })
  async tasks(
    @Context() ctx: GraphqlContext,
    @Args('filter', { type: () => TaskFilterInput, nullable: true }) filter?: TaskFilterInput,
    @Args('first', { type: () => Int, defaultValue: 50 }) first = 50,
    @Args('after', { type: () => String, nullable: true }) after?: string,
  ) {
    const who = await this.principals.of(ctx);
    if (first < 1 || first > MAX_PAGE) throw graphqlRefusal(`first: must be between 1 and ${MAX_PAGE}`, 'BAD_USER_INPUT');
    const projectIds = scopeProjects(who, filter?.projectIds);
    const page = await this.query.list({ ...(filter ?? {}), ...(projectIds ? { projectIds } : {}) }, first, after ?? undefined);
    const edges = page.tasks.map((node) => ({ cursor: encodeCursor(node.internalId), node }));
    return { edges, pageInfo: { hasNextPage: page.hasNextPage, endCursor: edges.at(-1)?.cursor ?? null } };
  }

  @Mutation(() => Task, {
    description:
      'resolves a task under review (unknown outcome, settled at its estimate, overrun, in flight too long): CHARGE `amount` or RELEASE, ' +
      'with a reason. CHARGE without an amount accepts what the task stands at: its settled charge (an overrun is the vendor\'s usage), ' +
      'or its hold when it never settled; an amount below a settled charge is a credit (an adjustment). Appends ledger entries; nothing is edited. Once per task.',
  })
  async resolveTask(
    @Context() ctx: GraphqlContext,
    @Args('taskId', { type: () => ID }) taskId: string,
    @Args('outcome', { type: () => TaskResolutionEnum }) outcome: TaskResolutionEnum,
    @Args('reason') reason: string,
    @Args('amount', { type: () => DecimalValue, nullable: true, description: 'CHARGE only; default: the settled charge, or the hold when unsettled' }) amount?: Decimal,
  ) {
    const who = await this.principals.of(ctx);
    const why = cleanText('reason', reason, 1000, { multiline: true });
    if (outcome === TaskResolutionEnum.RELEASE && amount && !amount.isZero()) {
      throw graphqlRefusal('amount: RELEASE charges nothing; give an amount only with CHARGE', 'BAD_USER_INPUT');
    }
    if (amount?.isNegative()) throw graphqlRefusal('amount: must not be negative (a refund of a settled charge is RELEASE or a smaller CHARGE)', 'BAD_USER_INPUT');
    const task = await this.query.find(taskId);
    requireOnTarget(who, 'corrections', task?.projectId, `task ${taskId.slice(0, 40)}`, 'resolveTask');
    if (!task) throw graphqlRefusal(`task ${taskId} not found`, 'NOT_FOUND');
    if (task.resolution) throw graphqlRefusal(`task ${taskId} was already resolved (${task.resolution.outcome} on ${task.resolution.resolvedAt.toISOString()})`, 'CONFLICT');
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
      () => this.ledger.resolve(task.internalId, outcome, outcome === TaskResolutionEnum.CHARGE ? amount : undefined, why),
    );
    return (await this.query.find(taskId))!;
  }
}
