import { assertAdmin } from '../auth/access.js';
import { requireUuid } from '../common/ids.js';
import { Principals, type GraphqlContext } from './graphql-auth.js';
import { Args, Context, ID, Mutation, Parent, Query, ResolveField, Resolver } from '@nestjs/graphql';
import { ApiKeyInfo } from './attribution.types.js';
import { ProjectsService } from '../projects/projects.service.js';
import { FailurePolicyEnum, Project, UnpricedPolicyEnum } from './graphql.types.js';
import type { Decimal } from '../pricing/money.js';
import { DecimalValue } from './scalars.js';

@Resolver(() => Project)
export class ProjectsResolver {
  constructor(
    private readonly service: ProjectsService,
    private readonly principals: Principals,
  ) {}

  @Query(() => [Project], { description: 'every project; a project key sees only its own' })
  async projects(@Context() ctx: GraphqlContext) {
    const who = await this.principals.of(ctx);
    return this.service.list(who.kind === 'project' ? who.projectId : undefined);
  }

  @Mutation(() => ID)
  async createProject(@Context() ctx: GraphqlContext, @Args('name') name: string) {
    assertAdmin(await this.principals.of(ctx), 'createProject');
    return (await this.service.create(name)).id;
  }

  @Mutation(() => String, { description: 'a new API key for the project; the secret is shown once. `tags` ("name=value") are the default tags of every task it submits' })
  async issueApiKey(
    @Context() ctx: GraphqlContext,
    @Args('projectId', { type: () => ID }) projectId: string,
    @Args('tags', { type: () => [String], nullable: true }) tags?: string[],
  ) {
    assertAdmin(await this.principals.of(ctx), 'issueApiKey');
    requireUuid('projectId', projectId);
    return this.service.issueKey(projectId, tags ?? []);
  }

  @ResolveField(() => [ApiKeyInfo], { description: "the project's API keys, newest first (prefixes and tags, never secrets)" })
  async apiKeys(@Parent() project: { id: string }) {
    return this.service.keys(project.id);
  }

  @Mutation(() => Boolean, { description: 'revokes a key by its public prefix (the 12 hex characters after sg_)' })
  async revokeApiKey(@Context() ctx: GraphqlContext, @Args('prefix') prefix: string) {
    assertAdmin(await this.principals.of(ctx), 'revokeApiKey');
    return this.service.revokeKey(prefix);
  }

  @Mutation(() => Boolean, {
    description:
      'unpriced policy: block (default) refuses tasks with no published price, allow records them as unpriced; failure policy; chat hold multiplier',
  })
  async setProjectPolicies(
    @Context() ctx: GraphqlContext,
    @Args('projectId', { type: () => ID }) projectId: string,
    @Args('unpricedPolicy', { type: () => UnpricedPolicyEnum, nullable: true }) unpricedPolicy?: UnpricedPolicyEnum,
    @Args('failurePolicy', { type: () => FailurePolicyEnum, nullable: true }) failurePolicy?: FailurePolicyEnum,
    @Args('chatHoldMultiplier', { type: () => DecimalValue, nullable: true, description: 'chat holds are the estimate × this (1 to 1000)' })
    chatHoldMultiplier?: Decimal,
  ) {
    assertAdmin(await this.principals.of(ctx), 'setProjectPolicies');
    requireUuid('projectId', projectId);
    await this.service.setPolicies(projectId, {
      ...(unpricedPolicy ? { unpricedPolicy } : {}),
      ...(failurePolicy ? { failurePolicy } : {}),
      ...(chatHoldMultiplier ? { chatHoldMultiplier } : {}),
    });
    return true;
  }
}
