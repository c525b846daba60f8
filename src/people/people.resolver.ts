/**
 * People, service accounts and tokens over GraphQL (decisions §11). Thin: access.ts decides, the services change, every
 * change is audited.
 */
import { Args, Context, Field, ID, Mutation, ObjectType, Query, registerEnumType, Resolver } from '@nestjs/graphql';
import { DateTimeScalar } from '../graphql/scalars.js';
import { actorOf, hasCapability, requireAccess, type Principal } from '../auth/access.js';
import type { Role } from '../auth/permissions.js';
import { ChangesService } from '../audit/changes.service.js';
import { ApiError } from '../common/api-error.js';
import { requireUuid } from '../common/ids.js';
import { Callers, type CallContext } from '../auth/callers.js';
import { PeopleService } from './people.service.js';
import { TokensService, type Holder } from './tokens.service.js';

export enum RoleEnum {
  OWNER = 'OWNER',
  FINANCE = 'FINANCE',
  LEAD = 'LEAD',
  VIEWER = 'VIEWER',
}
registerEnumType(RoleEnum, {
  name: 'Role',
  description: 'decisions §11: owner, finance, lead (of its projects), viewer',
});

@ObjectType()
export class Person {
  @Field(() => ID) id!: string;
  @Field() email!: string;
  @Field(() => String, { nullable: true }) displayName!: string | null;
  @Field(() => RoleEnum) role!: Role;
  @Field({ description: 'the role holds on every project' }) allProjects!: boolean;
  @Field(() => [ID]) projectIds!: string[];
  @Field({ description: 'invited | active | disabled' }) state!: string;
  @Field(() => String, { nullable: true, description: 'the OpenID provider they sign in with, once bound' })
  signsInWith!: string | null;
  @Field(() => String, { nullable: true }) invitedBy!: string | null;
  @Field(() => DateTimeScalar) createdAt!: Date;
  @Field(() => DateTimeScalar, { nullable: true }) lastSignInAt!: Date | null;
}

@ObjectType()
export class ServiceAccount {
  @Field(() => ID) id!: string;
  @Field() name!: string;
  @Field(() => RoleEnum) role!: Role;
  @Field() allProjects!: boolean;
  @Field(() => [ID]) projectIds!: string[];
  @Field(() => String, { nullable: true }) createdBy!: string | null;
  @Field(() => DateTimeScalar) createdAt!: Date;
  @Field(() => DateTimeScalar, { nullable: true }) disabledAt!: Date | null;
}

@ObjectType({ description: 'an access token: never its secret' })
export class Token {
  @Field(() => ID) id!: string;
  @Field({ description: 'sgp_ (a person) or sgs_ (a service account) followed by this' }) prefix!: string;
  @Field() name!: string;
  @Field({ description: "the holder's email or name" }) holder!: string;
  @Field(() => DateTimeScalar) createdAt!: Date;
  @Field(() => DateTimeScalar, { nullable: true }) expiresAt!: Date | null;
  @Field(() => DateTimeScalar, { nullable: true }) lastUsedAt!: Date | null;
  @Field(() => DateTimeScalar, { nullable: true }) revokedAt!: Date | null;
}

@ObjectType()
export class TokenCreated {
  @Field(() => Token) token!: Token;
  @Field({ description: 'the token itself, shown this once' }) secret!: string;
}

@Resolver()
export class PeopleResolver {
  constructor(
    private readonly persons: PeopleService,
    private readonly accessTokens: TokensService,
    private readonly callers: Callers,
    private readonly changes: ChangesService,
  ) {}

  @Query(() => [Person])
  async people() {
    return this.persons.people();
  }

  @Query(() => [ServiceAccount])
  async serviceAccounts() {
    return this.persons.serviceAccounts();
  }

  @Query(() => [Token], { description: "the caller's own tokens; with all: true (people's managers) every token" })
  async tokens(@Context() ctx: CallContext, @Args('all', { defaultValue: false }) all: boolean) {
    const who = await this.callers.of(ctx);
    if (all) {
      requireAccess(who, 'people', 'all', 'tokens');
      return this.accessTokens.list();
    }
    return this.accessTokens.list(ownHolder(who));
  }

  @Mutation(() => Person, {
    description: 'invites a person by email with a role on every project (projectIds omitted) or on those named',
  })
  async invitePerson(
    @Context() ctx: CallContext,
    @Args('email') email: string,
    @Args('role', { type: () => RoleEnum }) role: Role,
    @Args('projectIds', { type: () => [ID], nullable: true }) projectIds?: string[],
  ) {
    const who = await this.callers.of(ctx);
    return this.changes.run(
      who,
      ctx.client,
      (p: { id: string; projectIds: string[] }) => ({
        action: 'person.invite',
        targetKind: 'person',
        targetId: p.id,
        after: p,
      }),
      () => this.persons.invite(email, { role, projectIds: projectIds ?? null }, actorOf(who).label),
    );
  }

  @Mutation(() => Person, {
    description: "changes a person's role and the projects it holds on, from their next request",
  })
  async setRole(
    @Context() ctx: CallContext,
    @Args('personId', { type: () => ID }) personId: string,
    @Args('role', { type: () => RoleEnum }) role: Role,
    @Args('projectIds', { type: () => [ID], nullable: true }) projectIds?: string[],
  ) {
    const who = await this.callers.of(ctx);
    requireUuid('personId', personId);
    const before = await this.persons.person(personId);
    return this.changes.run(
      who,
      ctx.client,
      (after: unknown) => ({
        action: 'person.role',
        targetKind: 'person',
        targetId: personId,
        before: before ?? null,
        after,
      }),
      () => this.persons.setRole(personId, { role, projectIds: projectIds ?? null }),
    );
  }

  @Mutation(() => Person, {
    description: 'disables a person: their tokens and sessions stop at once, on every instance',
  })
  async disablePerson(@Context() ctx: CallContext, @Args('personId', { type: () => ID }) personId: string) {
    const who = await this.callers.of(ctx);
    requireUuid('personId', personId);
    const before = await this.persons.person(personId);
    return this.changes.run(
      who,
      ctx.client,
      (after: unknown) => ({
        action: 'person.disable',
        targetKind: 'person',
        targetId: personId,
        before: before ?? null,
        after,
      }),
      () => this.persons.disable(personId),
    );
  }

  @Mutation(() => ServiceAccount, {
    description: 'a service account (dashboards, scripts, CI) with a role; its tokens come from createToken',
  })
  async createServiceAccount(
    @Context() ctx: CallContext,
    @Args('name') name: string,
    @Args('role', { type: () => RoleEnum }) role: Role,
    @Args('projectIds', { type: () => [ID], nullable: true }) projectIds?: string[],
  ) {
    const who = await this.callers.of(ctx);
    return this.changes.run(
      who,
      ctx.client,
      (s: { id: string }) => ({
        action: 'service-account.create',
        targetKind: 'service-account',
        targetId: s.id,
        after: s,
      }),
      () => this.persons.createServiceAccount(name, { role, projectIds: projectIds ?? null }, actorOf(who).label),
    );
  }

  @Mutation(() => TokenCreated, {
    description:
      "a new access token for the caller, or for a service account (people's managers); the secret is shown once",
  })
  async createToken(
    @Context() ctx: CallContext,
    @Args('name') name: string,
    @Args('expiresAt', { type: () => DateTimeScalar, nullable: true }) expiresAt?: Date,
    @Args('serviceAccountId', { type: () => ID, nullable: true }) serviceAccountId?: string,
  ) {
    const who = await this.callers.of(ctx);
    let holder: Holder;
    if (serviceAccountId) {
      requireAccess(who, 'people', 'all', 'createToken');
      requireUuid('serviceAccountId', serviceAccountId);
      if (!(await this.persons.serviceAccount(serviceAccountId)))
        throw ApiError.notFound(`service account ${serviceAccountId} not found`);
      holder = { serviceAccountId };
    } else holder = ownHolder(who);
    return this.changes.run(
      who,
      ctx.client,
      (t: { token: { id: string; prefix: string; name: string; holder: string; expiresAt: Date | null } }) => ({
        action: 'token.create',
        targetKind: 'token',
        targetId: t.token.id,
        after: { prefix: t.token.prefix, name: t.token.name, holder: t.token.holder, expiresAt: t.token.expiresAt },
      }),
      () => this.accessTokens.create(holder, name, expiresAt ?? undefined),
    );
  }

  @Mutation(() => Boolean, { description: "revokes a token: the caller's own, or any (people's managers)" })
  async revokeToken(@Context() ctx: CallContext, @Args('tokenId', { type: () => ID }) tokenId: string) {
    const who = await this.callers.of(ctx);
    requireUuid('tokenId', tokenId);
    const token = await this.accessTokens.get(tokenId);
    const own =
      token &&
      ((who.kind === 'person' && token.personId === who.id) ||
        (who.kind === 'service' && token.serviceAccountId === who.id));
    if (!own) {
      if (!hasCapability(who, 'people')) throw ApiError.forbidden('revokeToken: you may revoke only your own tokens');
      requireAccess(who, 'people', 'all', 'revokeToken');
      if (!token) throw ApiError.notFound(`token ${tokenId} not found`);
    }
    return this.changes.run(
      who,
      ctx.client,
      {
        action: 'token.revoke',
        targetKind: 'token',
        targetId: tokenId,
        before: { prefix: token!.prefix, name: token!.name, holder: token!.holder },
      },
      () => this.accessTokens.revoke(tokenId),
    );
  }
}

/** The caller's own tokens: a person's or a service account's; the ADMIN_TOKEN and project keys have none. */
function ownHolder(who: Principal): Holder {
  if (who.kind === 'person') return { personId: who.id };
  if (who.kind === 'service') return { serviceAccountId: who.id };
  throw ApiError.forbidden(
    who.kind === 'admin'
      ? 'the ADMIN_TOKEN is not a person and has no tokens of its own: invite yourself (`spendgate user invite`) and sign in'
      : 'a project API key has no tokens of its own',
  );
}
