import { Args, Context, ID, Query, Resolver } from '@nestjs/graphql';
import { TasksQuery } from '../tasks/tasks.query.js';
import type { GraphqlContext } from './graphql-auth.js';
import { Task } from './graphql.types.js';
import { Principals } from './principals.js';

@Resolver(() => Task)
export class TasksResolver {
  constructor(
    private readonly tasks: TasksQuery,
    private readonly principals: Principals,
  ) {}

  @Query(() => Task, { nullable: true, description: "a task by its upstream taskId; null when missing or another project's" })
  async task(@Context() ctx: GraphqlContext, @Args('taskId', { type: () => ID }) taskId: string) {
    const who = await this.principals.of(ctx);
    const task = await this.tasks.find(taskId);
    if (!task || (who.kind === 'project' && who.projectId !== task.projectId)) return null;
    return task;
  }
}
