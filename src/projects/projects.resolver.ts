import { Args, Context, ID, Int, Mutation, Parent, Query, ResolveField, Resolver } from '@nestjs/graphql';
import { grantedProjects } from '../auth/access.js';
import { TargetLookups } from '../auth/target-lookups.js';
import { ApiError } from '../common/api-error.js';
import { actorOf } from '../auth/access.js';
import { ChangesService } from '../audit/changes.service.js';
import { requireUuid } from '../common/ids.js';
import { ProjectsService, type ApiKeyRow } from './projects.service.js';
import { dec } from '../pricing/money.js';
import { ApiKeyInfo } from '../graphql/attribution.types.js';
import { Callers, type CallContext } from '../auth/callers.js';
import { FailurePolicyEnum, Project, UnpricedPolicyEnum } from '../graphql/graphql.types.js';
import { DecimalValue, type DecimalText, DateTimeScalar } from '../graphql/scalars.js';

/** A project as `projects` lists it: its keys are read for the whole list at once. */
type ListedProject = Awaited<ReturnType<ProjectsService['list']>>[number] & {
  keysOf(projectId: string): Promise<ApiKeyRow[]>;
};

@Resolver(() => Project)
export class ProjectsResolver {
  constructor(
    private readonly service: ProjectsService,
    private readonly callers: Callers,
    private readonly changes: ChangesService,
    lookups: TargetLookups,
  ) {
    lookups.register('api-key', async (prefix) => (await this.service.keyByPrefix(prefix))?.projectId);
  }

  @Query(() => [Project], { description: 'the projects the caller may read (a project key: its own)' })
  async projects(@Context() ctx: CallContext): Promise<ListedProject[]> {
    const listed = await this.service.list(grantedProjects(await this.callers.of(ctx)));
    // Their keys, if the query asks for them, in one query for the whole list rather than one per project.
    let keys: Promise<Map<string, ApiKeyRow[]>> | undefined;
    const keysOf = async (id: string) =>
      (await (keys ??= this.service.keysByProject(listed.map((p) => p.id)))).get(id) ?? [];
    return listed.map((project) => ({ ...project, keysOf }));
  }

  @Mutation(() => ID)
  async createProject(@Context() ctx: CallContext, @Args('name') name: string) {
    const who = await this.callers.of(ctx);
    return this.changes
      .run(
        who,
        ctx.client,
        (p: { id: string; name: string }) => ({
          action: 'project.create',
          targetKind: 'project',
          targetId: p.id,
          projectId: p.id,
          after: p,
        }),
        () => this.service.create(name),
      )
      .then((p) => p.id);
  }

  @Mutation(() => String, {
    description:
      'a new API key for the project; the secret is shown once. `tags` ("name=value") are the default tags of every task it submits; `name` is what people call it; it stops working at `expiresAt`',
  })
  async issueApiKey(
    @Context() ctx: CallContext,
    @Args('projectId', { type: () => ID }) projectId: string,
    @Args('tags', { type: () => [String], nullable: true }) tags?: string[],
    @Args('name', { type: () => String, nullable: true }) name?: string,
    @Args('expiresAt', { type: () => DateTimeScalar, nullable: true }) expiresAt?: Date,
  ) {
    const who = await this.callers.of(ctx);
    requireUuid('projectId', projectId);
    return this.changes.run(
      who,
      ctx.client,
      async (key: string) => ({
        action: 'api-key.issue',
        targetKind: 'api-key',
        targetId: key.slice(3, 15),
        projectId,
        after: await this.service.keyByPrefix(key.slice(3, 15)),
      }),
      () =>
        this.service.issueKey(projectId, tags ?? [], {
          ...(name ? { name } : {}),
          ...(expiresAt ? { expiresAt } : {}),
          createdBy: actorOf(who).label,
        }),
    );
  }

  @Mutation(() => String, {
    description:
      'a new secret for the key (same prefix, budgets and attribution), shown once; the previous secret works for `overlapSeconds` more (default a day)',
  })
  async rotateApiKey(
    @Context() ctx: CallContext,
    @Args('prefix') prefix: string,
    @Args('overlapSeconds', { type: () => Int, nullable: true }) overlapSeconds?: number,
  ) {
    const who = await this.callers.of(ctx);
    const key = await this.service.keyByPrefix(prefix);
    if (!key) throw ApiError.notFound(`API key ${prefix.slice(0, 20)} not found`);
    return this.changes.run(
      who,
      ctx.client,
      {
        action: 'api-key.rotate',
        targetKind: 'api-key',
        targetId: prefix,
        projectId: key.projectId,
        after: { overlapSeconds: overlapSeconds ?? null },
      },
      () => this.service.rotateKey(prefix, overlapSeconds ?? undefined),
    );
  }

  @ResolveField(() => [ApiKeyInfo], {
    description: "the project's API keys, newest first (prefixes, names and tags, never secrets)",
  })
  async apiKeys(@Parent() project: { id: string; keysOf?: ListedProject['keysOf'] }) {
    return project.keysOf ? project.keysOf(project.id) : this.service.keys(project.id);
  }

  @Mutation(() => Boolean, { description: 'revokes a key by its public prefix (the 12 hex characters after sg_)' })
  async revokeApiKey(@Context() ctx: CallContext, @Args('prefix') prefix: string) {
    const who = await this.callers.of(ctx);
    const key = await this.service.keyByPrefix(prefix);
    if (!key) throw ApiError.notFound(`API key ${prefix.slice(0, 20)} not found`);
    return this.changes.run(
      who,
      ctx.client,
      { action: 'api-key.revoke', targetKind: 'api-key', targetId: prefix, projectId: key.projectId, before: key },
      () => this.service.revokeKey(prefix),
    );
  }

  @Mutation(() => Boolean, {
    description:
      'unpriced policy: block (default) refuses tasks with no published price, allow records them as unpriced; failure policy; chat hold multiplier',
  })
  async setProjectPolicies(
    @Context() ctx: CallContext,
    @Args('projectId', { type: () => ID }) projectId: string,
    @Args('unpricedPolicy', { type: () => UnpricedPolicyEnum, nullable: true }) unpricedPolicy?: UnpricedPolicyEnum,
    @Args('failurePolicy', { type: () => FailurePolicyEnum, nullable: true }) failurePolicy?: FailurePolicyEnum,
    @Args('chatHoldMultiplier', {
      type: () => DecimalValue,
      nullable: true,
      description: 'chat holds are the estimate × this (1 to 1000)',
    })
    chatHoldMultiplier?: DecimalText,
  ) {
    const who = await this.callers.of(ctx);
    requireUuid('projectId', projectId);
    const policies = {
      ...(unpricedPolicy ? { unpricedPolicy } : {}),
      ...(failurePolicy ? { failurePolicy } : {}),
      ...(chatHoldMultiplier ? { chatHoldMultiplier: dec(chatHoldMultiplier) } : {}),
    };
    const [before] = await this.service.list([projectId]);
    await this.changes.run(
      who,
      ctx.client,
      async () => ({
        action: 'project.policies',
        targetKind: 'project',
        targetId: projectId,
        projectId,
        before,
        after: (await this.service.list([projectId]))[0],
      }),
      () => this.service.setPolicies(projectId, policies),
    );
    return true;
  }
}
