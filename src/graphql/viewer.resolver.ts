/** `viewer`: who the bearer token is, so a client (the console) can show what that caller may do. */
import { Context, Field, ID, ObjectType, Query, Resolver } from '@nestjs/graphql';
import { ProjectsService } from '../projects/projects.service.js';
import { Principals, type GraphqlContext } from './graphql-auth.js';

@ObjectType({ description: 'the caller: the admin (reads and changes everything) or a project key (reads its own project)' })
export class Viewer {
  @Field() admin!: boolean;
  @Field(() => ID, { nullable: true, description: "a project key's project" }) projectId!: string | null;
  @Field(() => String, { nullable: true }) projectName!: string | null;
}

@Resolver(() => Viewer)
export class ViewerResolver {
  constructor(
    private readonly principals: Principals,
    private readonly projects: ProjectsService,
  ) {}

  @Query(() => Viewer, { description: 'who the bearer token is' })
  async viewer(@Context() ctx: GraphqlContext): Promise<Viewer> {
    const who = await this.principals.of(ctx);
    if (who.kind === 'admin') return { admin: true, projectId: null, projectName: null };
    const [project] = await this.projects.list(who.projectId);
    return { admin: false, projectId: who.projectId, projectName: project?.name ?? null };
  }
}
