/** `auditLog` over GraphQL. Thin: access.ts decides what the caller may read, AuditLogService reads. */
import { Args, Context, Field, ID, Int, ObjectType, Query, Resolver } from '@nestjs/graphql';
import { DateTimeScalar } from '../graphql/scalars.js';
import { scopeProjects } from '../auth/access.js';
import { requireUuid } from '../common/ids.js';
import { Callers, type CallContext } from '../auth/callers.js';
import { PageInfo } from '../graphql/graphql.types.js';
import { AuditLogService } from './audit-log.service.js';

@ObjectType({ description: 'one change, sign-in or use of the ADMIN_TOKEN (decisions §12); secrets never' })
export class AuditRecord {
  @Field(() => ID, { description: 'its place in the chain' }) seq!: string;
  @Field(() => DateTimeScalar) at!: Date;
  @Field({ description: 'person | service-account | api-key | admin-token | cli | unknown' }) actorKind!: string;
  @Field({ description: "an email, a service account's name, a key's prefix, ADMIN_TOKEN, cli:user@host" })
  actor!: string;
  @Field({ description: 'e.g. budget.set, person.invite, sign-in.oidc, sign-in.failed, admin-token.read' })
  action!: string;
  @Field(() => String, { nullable: true }) targetKind!: string | null;
  @Field(() => String, { nullable: true }) targetId!: string | null;
  @Field(() => String, { nullable: true, description: 'what it was done to, "kind id" (e.g. budget 4f…)' }) target!:
    string | null;
  @Field(() => ID, { nullable: true }) projectId!: string | null;
  @Field(() => String, { nullable: true, description: 'what it was, as canonical JSON' }) before!: string | null;
  @Field(() => String, { nullable: true, description: 'what it became, as canonical JSON' }) after!: string | null;
  @Field(() => String, { nullable: true }) requestId!: string | null;
  @Field(() => String, { nullable: true }) clientAddress!: string | null;
  @Field(() => String, { nullable: true }) userAgent!: string | null;
  @Field({ description: 'SHA-256 of the previous hash and this record (hex)' }) hash!: string;
}

@ObjectType()
export class AuditEdge {
  @Field() cursor!: string;
  @Field(() => AuditRecord) node!: AuditRecord;
}

@ObjectType()
export class AuditConnection {
  @Field(() => [AuditEdge]) edges!: AuditEdge[];
  @Field(() => PageInfo) pageInfo!: PageInfo;
}

@Resolver()
export class AuditResolver {
  constructor(
    private readonly log: AuditLogService,
    private readonly callers: Callers,
  ) {}

  @Query(() => AuditConnection, { description: "the audit trail, newest first; a lead reads its projects' records" })
  async auditLog(
    @Context() ctx: CallContext,
    @Args('from', { type: () => DateTimeScalar, nullable: true }) from?: Date,
    @Args('to', { type: () => DateTimeScalar, nullable: true }) to?: Date,
    @Args('actor', { type: () => String, nullable: true, description: 'a part of the actor' }) actor?: string,
    @Args('action', { type: () => String, nullable: true, description: 'an action, or its start (budget.)' })
    action?: string,
    @Args('projectId', { type: () => ID, nullable: true }) projectId?: string,
    @Args('first', { type: () => Int, defaultValue: 50 }) first = 50,
    @Args('after', { type: () => String, nullable: true }) after?: string,
  ) {
    const who = await this.callers.of(ctx);
    if (projectId) requireUuid('projectId', projectId);
    const projectIds = scopeProjects(who, projectId ? [projectId] : undefined, 'audit');
    const page = await this.log.page(
      {
        ...(from ? { from } : {}),
        ...(to ? { to } : {}),
        ...(actor ? { actor } : {}),
        ...(action ? { action } : {}),
        ...(projectId ? { projectId } : {}),
        ...(projectIds && !projectId ? { projectIds } : {}),
      },
      first,
      after ?? undefined,
    );
    const edges = page.records.map((r) => ({
      cursor: r.seq,
      node: {
        ...r,
        at: new Date(r.at),
        hash: r.hash.toString('hex'),
        target: r.targetKind ? [r.targetKind, r.targetId].filter(Boolean).join(' ') : null,
      },
    }));
    return { edges, pageInfo: { hasNextPage: page.hasNextPage, endCursor: edges.at(-1)?.cursor ?? null } };
  }
}
