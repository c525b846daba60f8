import { Args, Context, Field, GraphQLISODateTime, ID, InputType, Int, Query, Resolver } from '@nestjs/graphql';
import { encodeCursor, MAX_PAGE, TasksQuery } from '../tasks/tasks.query.js';
import { refused, type GraphqlContext } from './graphql-auth.js';
import { Task, TaskConnection } from './graphql.types.js';
import { Principals } from './principals.js';
import { scopeProjects } from '../auth/principals.service.js';

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
    private readonly query: TasksQuery,
    private readonly principals: Principals,
  ) {}

  @Query(() => Task, { nullable: true, description: "a task by its upstream taskId; null when missing or another project's" })
  async task(@Context() ctx: GraphqlContext, @Args('taskId', { type: () => ID }) taskId: string) {
    const who = await this.principals.of(ctx);
    const task = await this.query.find(taskId);
    if (!task || (who.kind === 'project' && who.projectId !== task.projectId)) return null;
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
    if (first < 1 || first > MAX_PAGE) throw refused(`first: must be between 1 and ${MAX_PAGE}`, 'BAD_USER_INPUT');
    const projectIds = scopeProjects(who, filter?.projectIds);
    const page = await this.query.list({ ...(filter ?? {}), ...(projectIds ? { projectIds } : {}) }, first, after ?? undefined);
    const edges = page.tasks.map((node) => ({ cursor: encodeCursor(node.internalId), node }));
    return { edges, pageInfo: { hasNextPage: page.hasNextPage, endCursor: edges.at(-1)?.cursor ?? null } };
  }
}
