/** `viewer`: who the caller is and what they may do, so a client (the console) shows only that. */
import { Context, Field, ID, ObjectType, Query, Resolver } from '@nestjs/graphql';
import { coversAll, grantedProjects, hasCapability, type Principal } from '../auth/access.js';
import { PAGE_RULES, type Capability } from '../auth/permissions.js';
import { ProjectsService } from '../projects/projects.service.js';
import { Callers, type CallContext } from '../auth/callers.js';

const CAPABILITIES: Capability[] = [
  'read',
  'budgets',
  'keys',
  'webhooks',
  'corrections',
  'books',
  'admin',
  'people',
  'audit',
];

@ObjectType({
  description: 'the caller: the ADMIN_TOKEN, a person, a service account or a project key, its role and grant',
})
export class Viewer {
  @Field({ description: 'ADMIN_TOKEN | PERSON | SERVICE_ACCOUNT | PROJECT_KEY' }) kind!: string;
  @Field({ description: 'the ADMIN_TOKEN: an owner of everything (break-glass)' }) admin!: boolean;
  @Field(() => String, { nullable: true, description: 'OWNER | FINANCE | LEAD | VIEWER; null for a project key' })
  role!: string | null;
  @Field({ description: 'the role is granted on every project' }) allProjects!: boolean;
  @Field(() => [ID], { description: 'the projects of the grant (empty when allProjects)' }) projectIds!: string[];
  @Field(() => String, { nullable: true, description: "a person's email, a service account's name" }) name!:
    string | null;
  @Field(() => String, { nullable: true }) email!: string | null;
  @Field(() => [String], {
    description:
      'capabilities held on some project: read, budgets, keys, webhooks, corrections, books, admin, people, audit',
  })
  can!: string[];
  @Field(() => [String], { description: "the console's pages this caller may open" }) pages!: string[];
  @Field(() => ID, { nullable: true, description: "a project key's project" }) projectId!: string | null;
  @Field(() => String, { nullable: true }) projectName!: string | null;
}

@Resolver(() => Viewer)
export class ViewerResolver {
  constructor(
    private readonly callers: Callers,
    private readonly projects: ProjectsService,
  ) {}

  @Query(() => Viewer, { description: 'who the caller is, and what they may do' })
  async viewer(@Context() ctx: CallContext): Promise<Viewer> {
    return viewerOf(await this.callers.of(ctx), this.projects);
  }
}

/** The viewer of a caller: this query's answer, and GET /auth/session's for a signed-in console. */
export async function viewerOf(who: Principal, projects: ProjectsService): Promise<Viewer> {
  const can = CAPABILITIES.filter((c) => hasCapability(who, c));
  const pages = Object.entries(PAGE_RULES)
    .filter(([, c]) => c === null || hasCapability(who, c))
    .map(([page]) => page)
    .filter((page) => page !== 'tokens' || who.kind === 'person' || who.kind === 'service');
  const project = who.kind === 'project' ? (await projects.list([who.projectId]))[0] : undefined;
  return {
    kind: KIND[who.kind],
    admin: who.kind === 'admin',
    role: who.kind === 'admin' ? 'OWNER' : who.kind === 'project' ? null : who.role,
    allProjects: coversAll(who),
    projectIds: grantedProjects(who) ?? [],
    name: who.kind === 'person' ? who.email : who.kind === 'service' ? who.name : null,
    email: who.kind === 'person' ? who.email : null,
    can,
    pages,
    projectId: who.kind === 'project' ? who.projectId : null,
    projectName: project?.name ?? null,
  };
}

const KIND: Record<Principal['kind'], string> = {
  admin: 'ADMIN_TOKEN',
  person: 'PERSON',
  service: 'SERVICE_ACCOUNT',
  project: 'PROJECT_KEY',
};
