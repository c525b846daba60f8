/**
 * The submission and polling paths: validate against the catalog, quote, hold atomically,
 * forward, record, and settle when a poll sees a terminal state.
 */
import { safeJson } from '../common/json.js';
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { Injectable } from '@nestjs/common';
import type { Endpoint } from '../catalog/catalog.types.js';
import { validateSubmission } from '../catalog/validate.js';
import { ApiError } from '../common/api-error.js';
import { MetricsService } from '../health/metrics.service.js';
import { LedgerService } from '../ledger/ledger.service.js';
import { quote, unitOf } from '../pricing/engine.js';
import { PriceBookService } from '../pricing/price-book.service.js';
import type { KeyContext } from '../projects/projects.service.js';
import { SettlementService, upstreamState } from '../tasks/settlement.service.js';
import { acceptanceOf } from '../upstream/acceptance.js';
import { UpstreamError } from '../upstream/upstream.client.js';
import { UpstreamService } from '../upstream/upstream.service.js';
import { ProjectPolicies } from './project-policies.js';
import { StreamRelayService } from './stream-relay.service.js';

export const UPSTREAM_PATHS: Record<Endpoint, string> = {
  chat: '/api-platform/v1/chat/completions',
  generations: '/api-platform/v1/generations',
};

export interface GatewayReply {
  status: number;
  contentType: string;
  /** A Readable when an upstream event stream is being relayed. */
  body: string | Buffer | Readable;
}

@Injectable()
export class GatewayService {
  constructor(
    private readonly ledger: LedgerService,
    private readonly priceBooks: PriceBookService,
    private readonly upstream: UpstreamService,
    private readonly settlement: SettlementService,
    private readonly policies: ProjectPolicies,
    private readonly metrics: MetricsService,
    private readonly streams: StreamRelayService,
  ) {}

  async submit(endpoint: Endpoint, ctx: KeyContext, body: unknown, idempotencyKey?: string): Promise<GatewayReply> {
    const validation = validateSubmission(endpoint, body);
    if (!validation.ok) {
      const first = validation.problems[0]!;
      throw ApiError.badRequest(`${first.field}: ${first.reason}`, { problems: validation.problems });
    }
    const { route } = validation;
    const book = this.priceBooks.inForce();
    const q = quote({ route, body: validation.body }, book);

    if (q.exactness === 'UNPRICED' && (await this.policies.unpricedPolicy(ctx.projectId)) === 'block') {
      this.metrics.holds.inc({ outcome: 'unpriced_blocked' });
      throw ApiError.paymentRequired(4021, `${q.warnings[0]}; this project blocks unpriced tasks (an operator can allow them or publish a price)`, {
        model: route.id,
        reason: q.warnings[0],
        unpricedPolicy: 'block',
      });
    }
    const requestJson = JSON.stringify(validation.body);
    const holdTimer = this.metrics.submissionStages.startTimer({ stage: 'hold' });
    const held = await this.ledger.hold({
      projectId: ctx.projectId,
      apiKeyId: ctx.apiKeyId,
      model: route.id,
      family: route.family,
      kind: route.kind,
      unit: unitOf(route),
      holdAmount: q.amount,
      quote: q,
      priceBookVersion: book.version,
      ...(idempotencyKey ? { idempotencyKey, requestHash: requestHash(endpoint, validation.body) } : {}),
    });
    this.metrics.holds.inc({ outcome: held.outcome });
    holdTimer();

    switch (held.outcome) {
      case 'refused':
        throw ApiError.paymentRequired(
          4020,
          `budget ${held.budgetId} (${held.period.toLowerCase()}, hard limit ${held.limit} ${q.unit}) would be exceeded: ` +
            `this request holds ${q.amount.toFixed()} ${q.unit} and ${held.remaining} ${q.unit} remain`,
          { budgetId: held.budgetId, period: held.period, unit: q.unit, limit: held.limit, remaining: held.remaining, estimate: q.amount.toFixed() },
        );
      case 'conflict':
        throw ApiError.conflict('Idempotency-Key was already used with a different request body', { idempotencyKey });
      case 'in_progress':
        throw ApiError.conflict('a request with this Idempotency-Key is still in progress; retry later', { idempotencyKey });
      case 'replay':
        return { status: 200, contentType: 'application/json', body: held.responseBody };
    }

    return this.forward(endpoint, held.taskId, requestJson);
  }

  private async forward(endpoint: Endpoint, taskId: string, requestJson: string): Promise<GatewayReply> {
    let res;
    const upstreamTimer = this.metrics.submissionStages.startTimer({ stage: 'upstream' });
    try {
      res = await this.upstream.client.open('POST', UPSTREAM_PATHS[endpoint], requestJson);
    } catch (error) {
      const e = error as UpstreamError;
      this.metrics.upstreamErrors.inc({ kind: e.outcome ?? 'unknown' });
      if (e.outcome === 'not_sent') {
        await this.ledger.reject(taskId, e.message);
        throw ApiError.badGateway(`${e.message}; nothing was charged`);
      }
      await this.ledger.markUnknown(taskId, e.message);
      throw ApiError.gatewayTimeout(`${e.message}; the task's outcome is unknown, its hold is kept for review`, { gatewayTaskId: taskId });
    }

    if ('stream' in res) return this.streams.submission(taskId, res);
    upstreamTimer();
    const text = res.body.toString('utf8');
    const accepted = res.status === 200 ? acceptanceOf(safeJson(text)) : undefined;
    if (accepted) {
      const recordTimer = this.metrics.submissionStages.startTimer({ stage: 'record' });
      await this.ledger.recordAccepted({ taskId, upstreamId: accepted.id, upstreamTaskId: accepted.taskId, responseBody: text });
      recordTimer();
      return { status: 200, contentType: res.contentType || 'application/json', body: text };
    }
    if (res.status === 200) {
      // A 200 we cannot read may still be an accepted task: never assume it free.
      this.metrics.upstreamErrors.inc({ kind: 'malformed' });
      await this.ledger.markUnknown(taskId, 'upstream answered 200 with a body that is not an accepted task');
      throw ApiError.badGateway('upstream answered with a malformed body; the task outcome is unknown and its hold is kept for review', {
        gatewayTaskId: taskId,
      });
    }
    this.metrics.upstreamErrors.inc({ kind: `http_${res.status}` });
    await this.ledger.reject(taskId, `upstream refused with HTTP ${res.status}`);
    throw ApiError.badGateway(`upstream refused the request with HTTP ${res.status}; nothing was charged`, {
      upstreamStatus: res.status,
      upstreamBody: safeJson(text),
    });
  }

  async poll(ctx: KeyContext, taskIdParam: string): Promise<GatewayReply> {
    const notFound = ApiError.notFound(`task ${taskIdParam.slice(0, 40)} not found`);
    if (!/^\d{1,19}$/.test(taskIdParam)) throw notFound;
    const task = await this.settlement.findByUpstreamId(taskIdParam, ctx.projectId);
    if (!task) throw notFound; // another project's task looks exactly like a missing one

    let res;
    try {
      res = await this.upstream.client.open('GET', `/api-platform/v1/tasks/${taskIdParam}`);
    } catch (error) {
      this.metrics.upstreamErrors.inc({ kind: `poll_${(error as UpstreamError).outcome ?? 'unknown'}` });
      throw ApiError.badGateway(`polling upstream failed: ${(error as Error).message}`);
    }
    if ('stream' in res) return this.streams.poll(task, res);
    const text = res.body.toString('utf8');
    if (res.status !== 200) {
      throw ApiError.badGateway(`upstream answered the poll with HTTP ${res.status}`, { upstreamStatus: res.status, upstreamBody: safeJson(text) });
    }
    const state = upstreamState(safeJson(text));
    if (!state) throw ApiError.badGateway('upstream answered the poll with a body that is not a task record');
    await this.settlement.apply(task, state);
    return { status: 200, contentType: res.contentType || 'application/json', body: text };
  }
}

/** Same key + same body means the same request: key order does not matter. */
export function requestHash(endpoint: Endpoint, body: unknown): string {
  return createHash('sha256').update(endpoint).update('\n').update(canonical(body)).digest('hex');
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.keys(value as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value);
}
