/**
 * Alerts' GraphQL (decisions §8; interfaces.md): endpoints and deliveries, admin only. Thin: WebhooksService does the
 * work.
 */
import {
  Args,
  Context,
  Field,
  ID,
  Int,
  Mutation,
  ObjectType,
  Query,
  registerEnumType,
  Resolver,
} from '@nestjs/graphql';
import { DateTimeScalar } from '../graphql/scalars.js';
import { WebhooksService } from './webhooks.service.js';
import { actorOf, can, requireAccess, scopeProjects } from '../auth/access.js';
import { TargetLookups } from '../auth/target-lookups.js';
import { ChangesService } from '../audit/changes.service.js';
import { requireUuid } from '../common/ids.js';
import { Callers, type CallContext } from '../auth/callers.js';
import { PageInfo } from '../graphql/graphql.types.js';

export enum WebhookFormatEnum {
  STANDARD = 'STANDARD',
  SLACK = 'SLACK',
  EMAIL = 'EMAIL',
}
export enum DeliveryStatusEnum {
  PENDING = 'PENDING',
  DELIVERED = 'DELIVERED',
  FAILED = 'FAILED',
}
registerEnumType(WebhookFormatEnum, { name: 'WebhookFormat' });
registerEnumType(DeliveryStatusEnum, { name: 'DeliveryStatus' });

@ObjectType({ description: 'where alerts are sent; never its secret' })
export class WebhookEndpoint {
  @Field(() => ID) id!: string;
  @Field() url!: string;
  @Field(() => ID, { nullable: true, description: "only this project's events; null: every project's" }) projectId!:
    string | null;
  @Field(() => [String], { description: 'event types it receives; empty: all' }) events!: string[];
  @Field(() => WebhookFormatEnum) format!: WebhookFormatEnum;
  @Field() enabled!: boolean;
  @Field(() => DateTimeScalar) createdAt!: Date;
}

@ObjectType()
export class WebhookEndpointCreated {
  @Field(() => WebhookEndpoint) endpoint!: WebhookEndpoint;
  @Field({ description: 'the signing secret (whsec_…), shown this once: keep it to verify signatures' })
  secret!: string;
}

@ObjectType({ description: 'one attempt to deliver: when, the answer or the error, how long it took' })
export class WebhookAttemptLog {
  @Field(() => Int) attempt!: number;
  @Field(() => DateTimeScalar) at!: Date;
  @Field(() => Int, { nullable: true }) statusCode!: number | null;
  @Field(() => Int) latencyMs!: number;
  @Field(() => String, { nullable: true }) error!: string | null;
}

@ObjectType({ description: 'one event to one endpoint' })
export class WebhookDelivery {
  @Field(() => ID) id!: string;
  @Field({ description: 'the event id, sent as webhook-id on every attempt' }) eventId!: string;
  @Field() eventType!: string;
  @Field(() => ID) endpointId!: string;
  @Field(() => DeliveryStatusEnum) status!: DeliveryStatusEnum;
  @Field(() => Int) attempts!: number;
  @Field(() => DateTimeScalar, { nullable: true, description: 'PENDING: when it is tried next' })
  nextAttemptAt!: Date | null;
  @Field(() => Int, { nullable: true }) lastStatusCode!: number | null;
  @Field(() => String, { nullable: true }) lastError!: string | null;
  @Field(() => DateTimeScalar, { nullable: true }) deliveredAt!: Date | null;
  @Field(() => DateTimeScalar) createdAt!: Date;
  @Field({ description: 'the event as JSON, as a STANDARD endpoint receives it' }) payload!: string;
  @Field(() => [WebhookAttemptLog], { description: 'every attempt, oldest first' }) log!: WebhookAttemptLog[];
}

@ObjectType()
export class WebhookDeliveryEdge {
  @Field() cursor!: string;
  @Field(() => WebhookDelivery) node!: WebhookDelivery;
}

@ObjectType()
export class WebhookDeliveryConnection {
  @Field(() => [WebhookDeliveryEdge]) edges!: WebhookDeliveryEdge[];
  @Field(() => PageInfo) pageInfo!: PageInfo;
}

@Resolver()
export class WebhooksResolver {
  constructor(
    private readonly webhooks: WebhooksService,
    private readonly callers: Callers,
    private readonly changes: ChangesService,
    lookups: TargetLookups,
  ) {
    lookups.register('webhook-endpoint', (id) => this.webhooks.projectOfEndpoint(id));
    lookups.register('webhook-delivery', (id) => this.webhooks.projectOfDelivery(id));
  }

  @Mutation(() => WebhookEndpointCreated, { description: 'a new endpoint; its signing secret is shown once' })
  async createWebhookEndpoint(
    @Context() ctx: CallContext,
    @Args('url') url: string,
    @Args('events', { type: () => [String], nullable: true, description: 'event types to send; none: all' })
    events?: string[],
    @Args('projectId', { type: () => ID, nullable: true, description: "only this project's events" })
    projectId?: string,
    @Args('format', { type: () => WebhookFormatEnum, defaultValue: WebhookFormatEnum.STANDARD })
    format: WebhookFormatEnum = WebhookFormatEnum.STANDARD,
  ) {
    const who = await this.callers.of(ctx);
    if (projectId) requireUuid('projectId', projectId);
    return this.changes.run(
      who,
      ctx.client,
      (made: { endpoint: { id: string } }) => ({
        action: 'webhook.create',
        targetKind: 'webhook-endpoint',
        targetId: made.endpoint.id,
        projectId: projectId ?? null,
        after: made.endpoint,
      }),
      () => this.webhooks.create({ url, events: events ?? null, projectId: projectId ?? null, format }),
    );
  }

  @Query(() => [WebhookEndpoint])
  async webhookEndpoints(@Context() ctx: CallContext) {
    const who = await this.callers.of(ctx);
    if (who.kind === 'project') requireAccess(who, 'webhooks', who.projectId, 'webhookEndpoints');
    // A URL may carry a secret (a Slack webhook's path): only those who manage an endpoint see it whole.
    return (await this.webhooks.list(scopeProjects(who, undefined))).map((e) =>
      can(who, 'webhooks', e.projectId ?? 'all') ? e : { ...e, url: maskedUrl(e.url) },
    );
  }

  @Mutation(() => WebhookEndpoint, {
    description: 'a disabled endpoint gets no new events; its pending deliveries fail',
  })
  async setWebhookEndpointEnabled(
    @Context() ctx: CallContext,
    @Args('id', { type: () => ID }) id: string,
    @Args('enabled') enabled: boolean,
  ) {
    const who = await this.callers.of(ctx);
    const projectId = await this.webhooks.projectOfEndpoint(id);
    return this.changes.run(
      who,
      ctx.client,
      (after: unknown) => ({
        action: enabled ? 'webhook.enable' : 'webhook.disable',
        targetKind: 'webhook-endpoint',
        targetId: id,
        projectId,
        after,
      }),
      () => this.webhooks.setEnabled(id, enabled),
    );
  }

  @Mutation(() => ID, {
    description:
      'queues a webhook.test event for this endpoint only (its delivery shows in webhookDeliveries); the event id',
  })
  async sendTestWebhook(@Context() ctx: CallContext, @Args('id', { type: () => ID }) id: string) {
    const who = await this.callers.of(ctx);
    const projectId = await this.webhooks.projectOfEndpoint(id);
    return this.changes.run(
      who,
      ctx.client,
      (eventId: string) => ({
        action: 'webhook.test',
        targetKind: 'webhook-endpoint',
        targetId: id,
        projectId,
        after: { eventId },
      }),
      () => this.webhooks.sendTest(id, actorOf(who).label),
    );
  }

  @Mutation(() => Boolean)
  async deleteWebhookEndpoint(@Context() ctx: CallContext, @Args('id', { type: () => ID }) id: string) {
    const who = await this.callers.of(ctx);
    const projectId = await this.webhooks.projectOfEndpoint(id);
    return this.changes.run(
      who,
      ctx.client,
      { action: 'webhook.delete', targetKind: 'webhook-endpoint', targetId: id, projectId },
      () => this.webhooks.delete(id),
    );
  }

  @Query(() => WebhookDeliveryConnection, { description: 'newest first' })
  async webhookDeliveries(
    @Context() ctx: CallContext,
    @Args('endpointId', { type: () => ID, nullable: true }) endpointId?: string,
    @Args('status', { type: () => DeliveryStatusEnum, nullable: true }) status?: DeliveryStatusEnum,
    @Args('first', { type: () => Int, defaultValue: 50 }) first = 50,
    @Args('after', { type: () => String, nullable: true }) after?: string,
  ) {
    const who = await this.callers.of(ctx);
    if (who.kind === 'project') requireAccess(who, 'webhooks', who.projectId, 'webhookDeliveries');
    const projectIds = scopeProjects(who, undefined);
    const page = await this.webhooks.deliveries({
      endpointId: endpointId ?? null,
      status: status ?? null,
      first,
      after: after ?? null,
      ...(projectIds ? { projectIds } : {}),
    });
    const edges = page.rows.map((node) => ({ cursor: node.id, node }));
    return { edges, pageInfo: { hasNextPage: page.hasNextPage, endCursor: edges.at(-1)?.cursor ?? null } };
  }

  @Mutation(() => Boolean, { description: 'sends it again now, with the same webhook-id' })
  async redeliverWebhook(@Context() ctx: CallContext, @Args('deliveryId', { type: () => ID }) deliveryId: string) {
    const who = await this.callers.of(ctx);
    const projectId = await this.webhooks.projectOfDelivery(deliveryId);
    return this.changes.run(
      who,
      ctx.client,
      { action: 'webhook.redeliver', targetKind: 'webhook-delivery', targetId: deliveryId, projectId },
      () => this.webhooks.redeliver(deliveryId),
    );
  }
}

/**
 * What a reader who may not manage an endpoint sees of its URL: where it goes, never its secret
 * part. An https URL keeps its origin; mailto (no origin: `new URL().origin` is "null") keeps the
 * domain of each address.
 */
export function maskedUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.protocol === 'mailto:')
    return `mailto:…@${[...new Set(parsed.pathname.split(',').map((a) => a.split('@')[1] ?? '…'))].join(', …@')}`;
  return parsed.origin === 'null' ? `${parsed.protocol}…` : `${parsed.origin}/…`;
}
