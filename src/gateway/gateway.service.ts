/**
 * The submission and polling paths: validate against the catalog, quote, hold atomically,
 * forward, record, and settle when a poll sees a terminal state.
 *
 * What a client is told after the hold is placed follows what the vendor did, never a guess:
 * "nothing was charged" only when the vendor refused or was never reached; an accepted task is
 * recorded even through a database outage (LandingWrites); an unknown outcome keeps its hold and
 * its answer, which a repeated Idempotency-Key gets again (decisions §10).
 */
import { createHash } from 'node:crypto';
import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import type { Endpoint } from '../catalog/catalog.types.js';
import { validateSubmission } from '../catalog/validate.js';
import { ApiError } from '../common/api-error.js';
import { isDatabaseUnavailable } from '../common/error.filter.js';
import { bigintId, clip } from '../common/ids.js';
import { safeJson } from '../common/json.js';
import { CONFIG, type Config } from '../config/config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { LedgerService, type HoldOutcome } from '../ledger/ledger.service.js';
import { quote } from '../pricing/engine.js';
import { Money } from '../pricing/money.js';
import { PriceBookService } from '../pricing/price-book.service.js';
import type { Attribution } from '../attribution/attribution.js';
import type { KeyContext } from '../auth/principals.service.js';
import { SettlementService } from '../tasks/settlement.service.js';
import { TaskStore } from '../tasks/task-store.js';
import { acceptanceOf, upstreamState, VENDOR_PATHS } from '../upstream/vendor-protocol.js';
import { upstreamSummary } from '../upstream/redact.js';
import { UpstreamError } from '../upstream/upstream.client.js';
import { UpstreamService } from '../upstream/upstream.service.js';
import type { GatewayReply } from './gateway-reply.js';
import { LandingWrites } from './landing-writes.js';
import { ProjectPolicies } from '../projects/project-policies.js';
import { StreamRelayService } from './stream-relay.service.js';
import { ExhaustionEvents } from '../alerts/exhaustion-events.js';

/** A refusal lists at most this many problems (the rest are counted): a 400 stays small. */
export const MAX_LISTED_PROBLEMS = 20;

@Injectable()
export class GatewayService implements OnApplicationShutdown {
  private readonly landing: LandingWrites;

  constructor(
    @Inject(CONFIG) config: Config,
    private readonly ledger: LedgerService,
    private readonly tasks: TaskStore,
    private readonly priceBooks: PriceBookService,
    private readonly upstream: UpstreamService,
    private readonly settlement: SettlementService,
    private readonly policies: ProjectPolicies,
    private readonly metrics: MetricsService,
    private readonly streams: StreamRelayService,
    private readonly exhaustion: ExhaustionEvents,
  ) {
    this.landing = new LandingWrites(config.RECORD_RETRY_WINDOW_MS);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.landing.stop();
  }

  async submit(endpoint: Endpoint, ctx: KeyContext, body: unknown, idempotencyKey?: string, attribution: Attribution = { user: null, tags: ctx.tags }): Promise<GatewayReply> {
    const validation = validateSubmission(endpoint, body);
    if (!validation.ok) {
      const { problems } = validation;
      const first = problems[0]!;
      const more = problems.length - MAX_LISTED_PROBLEMS;
      throw ApiError.badRequest(`${first.field}: ${first.reason}`, {
        problems: problems.slice(0, MAX_LISTED_PROBLEMS),
        ...(more > 0 ? { moreProblems: more } : {}),
      });
    }
    const { route } = validation;
    const book = this.priceBooks.inForce();
    const q = quote({ route, body: validation.body }, book);
    const policies = await this.policies.of(ctx.projectId);

    if (q.exactness === 'UNPRICED' && policies.unpriced === 'block') {
      this.metrics.holds.inc({ outcome: 'unpriced_blocked' });
      throw ApiError.paymentRequired(4021, `${q.warnings[0]}; this project blocks unpriced tasks (an operator can allow them or publish a price)`, {
        model: route.id,
        reason: q.warnings[0],
        unpricedPolicy: 'block',
      });
    }
    // A chat estimate covers the most output the request allows; a project may hold more (§6).
    const estimate = Money.of(q.unit, q.amount);
    const hold = q.exactness === 'ESTIMATE' ? estimate.times(policies.chatHoldMultiplier) : estimate;
    const requestJson = JSON.stringify(validation.body);
    const holdTimer = this.metrics.submissionStages.startTimer({ stage: 'hold' });
    let held: HoldOutcome;
    try {
      held = await this.ledger.hold({
        projectId: ctx.projectId,
        apiKeyId: ctx.apiKeyId,
        model: route.id,
        family: route.family,
        kind: route.kind,
        hold,
        endUser: attribution.user,
        tags: attribution.tags,
        quote: q,
        priceBookVersion: book.version,
        ...(idempotencyKey ? { idempotencyKey, requestHash: requestHash(endpoint, validation.body, attribution) } : {}),
      });
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
      throw ApiError.serviceUnavailable('the database is unavailable, so the request was not sent to the vendor; retry shortly');
    }
    this.metrics.holds.inc({ outcome: held.outcome });
    holdTimer();

    switch (held.outcome) {
      case 'refused':
        this.exhaustion.record(held.budgetId, held.subject);
        throw budgetRefusal(held, estimate, hold);
      case 'conflict':
        throw ApiError.conflict('Idempotency-Key was already used with a different request body', { idempotencyKey });
      case 'in_progress':
        throw ApiError.conflict('a request with this Idempotency-Key is still in progress; retry later', { idempotencyKey });
      case 'unknown':
        throw unknownOutcome(held.taskId, 'the first request with this Idempotency-Key has an unknown outcome');
      case 'replay':
        return { status: held.responseStatus ?? 200, contentType: 'application/json', body: held.responseBody };
    }

    return this.forward(endpoint, held.taskId, requestJson);
  }

  private async forward(endpoint: Endpoint, taskId: string, requestJson: string): Promise<GatewayReply> {
    let res;
    const upstreamTimer = this.metrics.submissionStages.startTimer({ stage: 'upstream' });
    try {
      res = await this.upstream.client.open('POST', VENDOR_PATHS.submit[endpoint], requestJson);
    } catch (error) {
      const e = error as UpstreamError;
      this.metrics.upstreamErrors.inc({ kind: e.outcome ?? 'unknown' });
      if (e.outcome === 'not_sent') {
        await this.landing.land(`release of task ${taskId}`, () => this.ledger.reject(taskId, e.message));
        throw ApiError.badGateway(`${e.message}; nothing was charged (the request never reached the vendor)`);
      }
      throw await this.unknown(taskId, e.message, ApiError.gatewayTimeout(`${e.message}; the task's outcome is unknown, its hold is kept for review`, { gatewayTaskId: `gw-${taskId}` }));
    }

    if ('stream' in res) return this.streams.submission(taskId, res);
    upstreamTimer();
    const text = this.upstream.redactor.redact(res.body.toString('utf8'));
    const accepted = res.status === 200 ? acceptanceOf(safeJson(text)) : undefined;
    if (accepted) {
      const recordTimer = this.metrics.submissionStages.startTimer({ stage: 'record' });
      const record = { taskId, upstreamId: accepted.id, upstreamTaskId: accepted.taskId, responseBody: text };
      let landed;
      try {
        landed = await this.landing.land(`record of task ${taskId}`, () => this.tasks.recordAccepted(record));
      } catch (error) {
        // The vendor's answer itself cannot be recorded (its taskId is already another task's):
        // the vendor did accept something, so the hold stays and a person looks at it.
        this.metrics.upstreamErrors.inc({ kind: 'unrecordable' });
        throw await this.unknown(
          taskId,
          `the vendor accepted it as taskId ${accepted.taskId}, which could not be recorded (${(error as Error).message})`,
          ApiError.badGateway(
            `the vendor answered with taskId ${accepted.taskId}, which is already recorded for another task; the task's outcome is unknown and its hold is kept for review`,
            { gatewayTaskId: `gw-${taskId}`, upstreamTaskId: accepted.taskId },
          ),
        );
      }
      recordTimer();
      if (!landed.landed) {
        this.metrics.upstreamErrors.inc({ kind: 'record_delayed' });
        throw new ApiError(
          503,
          5031,
          `the vendor accepted this task as taskId ${accepted.taskId}, but the database is unavailable and the gateway has not recorded it yet. ` +
            'Do not submit it again: the gateway keeps recording it and charges it from its usage once the database is back ' +
            "(if this instance stops first, the task is marked unknown with its hold kept for review). Poll it by its taskId.",
          { upstreamTaskId: accepted.taskId, gatewayTaskId: `gw-${taskId}`, outcome: 'accepted, not yet recorded' },
        );
      }
      return { status: 200, contentType: res.contentType || 'application/json', body: text };
    }
    if (res.status === 200) {
      // A 200 we cannot read may still be an accepted task: never assume it free.
      this.metrics.upstreamErrors.inc({ kind: 'malformed' });
      throw await this.unknown(
        taskId,
        'upstream answered 200 with a body that is not an accepted task',
        ApiError.badGateway('upstream answered with a malformed body; the task outcome is unknown and its hold is kept for review', { gatewayTaskId: `gw-${taskId}` }),
      );
    }
    this.metrics.upstreamErrors.inc({ kind: `http_${res.status}` });
    await this.landing.land(`release of task ${taskId}`, () => this.ledger.reject(taskId, `upstream refused with HTTP ${res.status}`));
    throw ApiError.badGateway(
      `upstream refused the request with HTTP ${res.status}; nothing was charged`,
      upstreamSummary(this.upstream.redactor, res.status, safeJson(text)),
    );
  }

  /** Marks the task unknown with the answer its client gets (kept for a repeated Idempotency-Key); returns that answer. */
  private async unknown(taskId: string, reason: string, answer: ApiError): Promise<ApiError> {
    await this.landing.land(`unknown mark of task ${taskId}`, () =>
      this.tasks.markUnknown(taskId, reason, { status: answer.status, body: JSON.stringify(answer.toBody()) }),
    );
    return answer;
  }

  async poll(ctx: KeyContext, taskIdParam: string): Promise<GatewayReply> {
    const notFound = ApiError.notFound(`task ${clip(taskIdParam)} not found`);
    const upstreamTaskId = bigintId(taskIdParam);
    if (!upstreamTaskId) throw notFound; // not a number the vendor could have given
    const task = await this.tasks.findByUpstreamId(upstreamTaskId, ctx.projectId);
    if (!task) throw notFound; // another project's task looks exactly like a missing one

    let res;
    try {
      res = await this.upstream.client.open('GET', VENDOR_PATHS.task(upstreamTaskId));
    } catch (error) {
      this.metrics.upstreamErrors.inc({ kind: `poll_${(error as UpstreamError).outcome ?? 'unknown'}` });
      throw ApiError.badGateway(`polling upstream failed: ${(error as Error).message}`);
    }
    if ('stream' in res) return this.streams.poll(task, res);
    const text = this.upstream.redactor.redact(res.body.toString('utf8'));
    if (res.status !== 200) {
      throw ApiError.badGateway(`upstream answered the poll with HTTP ${res.status}`, upstreamSummary(this.upstream.redactor, res.status, safeJson(text)));
    }
    const state = upstreamState(safeJson(text));
    if (!state) throw ApiError.badGateway('upstream answered the poll with a body that is not a task record');
    await this.settlement.apply(task, state);
    return { status: 200, contentType: res.contentType || 'application/json', body: text };
  }
}

/** The 402 of a hard budget: what the request would hold and what remains, or by how much the budget is already overrun. */
function budgetRefusal(held: Extract<HoldOutcome, { outcome: 'refused' }>, estimate: Money, hold: Money): ApiError {
  const unit = hold.unit;
  const remaining = held.remaining;
  const overrunBy = remaining.startsWith('-') ? remaining.slice(1) : undefined;
  const scope = held.scope === 'PROJECT' ? '' : `${describeScope(held)}, `;
  const budget = `budget ${held.budgetId} (${scope}${held.period.toLowerCase()}, hard limit ${held.limit} ${unit})`;
  const message = overrunBy
    ? `${budget} is overrun by ${overrunBy} ${unit}: it refuses every submission in ${unit} until its next period or a higher limit`
    : `${budget} would be exceeded: this request holds ${hold} and ${remaining} ${unit} remain`;
  return ApiError.paymentRequired(4020, message, {
    budgetId: held.budgetId,
    scope: held.scope,
    ...(held.scopeValue !== null ? { scopeValue: held.scopeValue } : {}),
    ...(held.subject ? { user: held.subject } : {}),
    period: held.period,
    unit,
    limit: held.limit,
    remaining,
    estimate: estimate.toFixed(),
    hold: hold.toFixed(),
    ...(overrunBy ? { overrunBy } : {}),
  });
}

/** What a scoped budget counts, as a person reads it: "API key ab12…", "tag team=ml", "user u-7", "each user, here u-7". */
function describeScope(held: Extract<HoldOutcome, { outcome: 'refused' }>): string {
  switch (held.scope) {
    case 'PROJECT':
      return 'project';
    case 'API_KEY':
      return `API key ${held.scopeValue}`;
    case 'TAG':
      return `tag ${held.scopeValue}`;
    case 'USER':
      return `user ${held.scopeValue}`;
    case 'EACH_USER':
      return `each user, here ${held.subject}`;
  }
}

/** A repeated Idempotency-Key whose first request's outcome is unknown and was never answered. */
function unknownOutcome(taskId: string, why: string): ApiError {
  return ApiError.gatewayTimeout(`${why} (task gw-${taskId}): its hold is kept for review and it is not sent to the vendor again`, {
    gatewayTaskId: `gw-${taskId}`,
  });
}

/**
 * Same key + same body + same attribution means the same request (decisions §7): key order in the
 * body does not matter; a different end user or different tags make it a different request.
 */
export function requestHash(endpoint: Endpoint, body: unknown, attribution: Attribution = { user: null, tags: [] }): string {
  const hash = createHash('sha256').update(endpoint).update('\n').update(canonical(body));
  if (attribution.user !== null || attribution.tags.length > 0) hash.update('\n').update(canonical(attribution));
  return hash.digest('hex');
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
