/**
 * The submission and polling paths: validate against the catalog, quote, hold atomically (the
 * hold step and a database failure during it: submission-hold.ts), forward, record, and settle
 * when a poll sees a terminal state.
 *
 * What a client is told after the hold is placed follows what the vendor did, never a guess:
 * "nothing was charged" only when the vendor refused or was never reached; an accepted task is
 * recorded even through a database outage (LandingWrites); an unknown outcome keeps its hold and
 * its answer, which a repeated Idempotency-Key gets again (decisions §10).
 */
import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import type { Endpoint, ModelRoute } from '../catalog/catalog.types.js';
import { validateSubmission } from '../catalog/validate.js';
import { ApiError } from '../common/api-error.js';
import { bigintId, clip } from '../common/ids.js';
import { safeJson } from '../common/json.js';
import { CONFIG, type Config } from '../config/config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { step, type Trace } from '../telemetry/tracing.service.js';
import { LedgerService, type HoldOutcome } from '../ledger/ledger.service.js';
import { quote } from '../pricing/engine.js';
import { Money } from '../pricing/money.js';
import { PriceBookService } from '../pricing/price-book.service.js';
import type { Attribution } from '../attribution/attribution.js';
import type { KeyContext } from '../auth/principals.service.js';
import { SettlementService } from '../tasks/settlement.service.js';
import { TaskStore, type TaskForSettlement } from '../tasks/task-store.js';
import { archivedTask } from '../tasks/archived-tasks.js';
import { VENDOR_PATHS } from '../catalog/vendor-paths.js';
import { acceptanceOf, isTaskNotFound, upstreamState } from '../upstream/vendor-protocol.js';
import { budgetRefusal, recordAnswer, requestHash, unknownOutcome } from './gateway-answers.js';
import { upstreamSummary } from '../upstream/redact.js';
import { UpstreamError } from '../upstream/upstream.client.js';
import { UpstreamService } from '../upstream/upstream.service.js';
import type { GatewayReply } from './gateway-reply.js';
import { LandingWrites } from './landing-writes.js';
import { SubmissionHold, type Priced } from './submission-hold.js';
import { ProjectPolicies, type SubmissionPolicies } from '../projects/project-policies.js';
import { StreamRelayService } from './stream-relay.service.js';
import { LimitEvents } from '../limits/limit-events.js';
import { limitRefusal } from '../limits/limit-refusal.js';
import { ExhaustionEvents } from '../alerts/exhaustion-events.js';

/** A refusal lists at most this many problems (the rest are counted): a 400 stays small. */
export const MAX_LISTED_PROBLEMS = 20;
/** Quotes of one request against a price book that changed meanwhile (one change is the rule). */
const STALE_PRICE_ATTEMPTS = 3;

@Injectable()
export class GatewayService implements OnApplicationShutdown {
  private readonly landing: LandingWrites;
  private readonly holds: SubmissionHold;
  private readonly pollInterval: number;
  private readonly notFoundAfterMs: number;

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
    private readonly limitEvents: LimitEvents,
  ) {
    this.landing = new LandingWrites(config.RECORD_RETRY_WINDOW_MS);
    this.holds = new SubmissionHold(ledger, metrics);
    this.pollInterval = config.POLL_INTERVAL_MS;
    this.notFoundAfterMs = config.TASK_NOT_FOUND_AFTER_MS;
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([this.landing.stop(), this.holds.stop()]);
  }

  async submit(
    endpoint: Endpoint,
    ctx: KeyContext,
    body: unknown,
    idempotencyKey?: string,
    attribution: Attribution = { user: null, tags: ctx.tags },
    t?: Trace,
  ): Promise<GatewayReply> {
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
    t?.root.setAttributes({ 'gen_ai.request.model': route.id, 'spendgate.model.kind': route.kind });
    const policies = await this.policies.of(ctx.projectId);
    const requestJson = JSON.stringify(validation.body);
    const hash = idempotencyKey ? requestHash(endpoint, validation.body, attribution) : undefined;
    let held: HoldOutcome;
    let priced: Priced;
    // Quoted with the version this instance knows; if the database has another in force at the
    // hold, the versions are read again and it is quoted once more (decisions §3).
    for (let attempt = 1; ; attempt++) {
      priced = step(t, 'quote', () => this.price(route, validation.body, policies));
      const p = priced;
      held = await step(t, 'hold', () => this.holds.place(ctx, route, p, attribution, idempotencyKey, hash));
      if (held.outcome !== 'stale_price' || attempt === STALE_PRICE_ATTEMPTS) break;
      await this.priceBooks.refreshNow();
    }
    const { estimate, hold } = priced;
    t?.root.setAttributes({
      'spendgate.hold.outcome': held.outcome,
      'spendgate.hold.amount': hold.amount.toFixed(),
      'spendgate.hold.unit': hold.unit,
      'spendgate.quote.exactness': priced.quote.exactness,
    });

    switch (held.outcome) {
      case 'refused':
        this.exhaustion.record(held.budgetId, held.subject);
        throw budgetRefusal(held, estimate, hold);
      case 'conflict':
        throw ApiError.conflict(
          'Idempotency-Key was already used with a different request body (or other X-Spendgate-User or X-Spendgate-Tags)',
          { idempotencyKey },
        );
      case 'in_progress':
        throw ApiError.conflict('a request with this Idempotency-Key is still in progress; retry later', {
          idempotencyKey,
        });
      case 'unknown':
        throw unknownOutcome(held.taskId, 'the first request with this Idempotency-Key has an unknown outcome');
      case 'replay':
        return { status: held.responseStatus ?? 200, contentType: 'application/json', body: held.responseBody };
      case 'limited':
        this.limitEvents.record(held.refusal);
        throw limitRefusal(held.refusal);
      case 'stale_price':
        throw ApiError.serviceUnavailable(
          'the price book changed while this request was quoted; nothing was charged, retry',
          { priceBookVersion: held.inForce },
        );
    }

    t?.root.setAttribute('spendgate.task.id', held.taskId);
    return this.forward(endpoint, held.taskId, requestJson, t);
  }

  /** The quote with the version in force as this instance knows it, and what it holds (or the unpriced refusal). */
  private price(route: ModelRoute, body: Record<string, unknown>, policies: SubmissionPolicies): Priced {
    const book = this.priceBooks.inForce();
    const q = quote({ route, body }, book);
    if (q.exactness === 'UNPRICED' && policies.unpriced === 'block') {
      this.metrics.holds.inc({ outcome: 'unpriced_blocked' });
      throw ApiError.paymentRequired(
        4021,
        `${q.warnings[0]}; this project blocks unpriced tasks (an operator can allow them or publish a price)`,
        {
          model: route.id,
          reason: q.warnings[0],
          unpricedPolicy: 'block',
        },
      );
    }
    // A chat estimate covers the most output the request allows; a project may hold more (§6).
    const estimate = Money.of(q.unit, q.amount);
    const hold = q.exactness === 'ESTIMATE' ? estimate.times(policies.chatHoldMultiplier) : estimate;
    return { quote: q, version: book.version, estimate, hold };
  }

  private async forward(endpoint: Endpoint, taskId: string, requestJson: string, t?: Trace): Promise<GatewayReply> {
    let res;
    const upstreamTimer = this.metrics.submissionStages.startTimer({ stage: 'upstream' });
    try {
      res = await step(
        t,
        'vendor call',
        () => this.upstream.client.open('POST', VENDOR_PATHS.submit[endpoint], requestJson),
        {
          'server.address': this.upstream.client.host,
        },
      );
    } catch (error) {
      const e = error as UpstreamError;
      this.metrics.upstreamErrors.inc({ kind: e.outcome ?? 'unknown' });
      if (e.outcome === 'not_sent') {
        await this.landing.land(`release of task ${taskId}`, () => this.ledger.releaseRejected(taskId, e.message));
        throw ApiError.badGateway(`${e.message}; nothing was charged (the request never reached the vendor)`);
      }
      throw await this.unknown(
        taskId,
        e.message,
        ApiError.gatewayTimeout(`${e.message}; the task's outcome is unknown, its hold is kept for review`, {
          gatewayTaskId: `gw-${taskId}`,
        }),
      );
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
        landed = await step(t, 'record', () =>
          this.landing.land(`record of task ${taskId}`, () => this.tasks.recordAccepted(record)),
        );
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
            '(if this instance stops first, the task is marked unknown with its hold kept for review). Poll it by its taskId.',
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
        ApiError.badGateway(
          'upstream answered with a malformed body; the task outcome is unknown and its hold is kept for review',
          { gatewayTaskId: `gw-${taskId}` },
        ),
      );
    }
    this.metrics.upstreamErrors.inc({ kind: `http_${res.status}` });
    await this.landing.land(`release of task ${taskId}`, () =>
      this.ledger.releaseRejected(taskId, `upstream refused with HTTP ${res.status}`),
    );
    throw ApiError.badGateway(
      `upstream refused the request with HTTP ${res.status}; nothing was charged`,
      upstreamSummary(this.upstream.redactor, res.status, safeJson(text)),
    );
  }

  private async vendorForgot(task: TaskForSettlement): Promise<GatewayReply> {
    await this.tasks.vendorMissing(task.id, this.pollInterval, this.notFoundAfterMs);
    return recordAnswer((await this.tasks.recordView(task.id))!);
  }

  /**
   * Marks the task unknown with the answer its client gets (kept for a repeated Idempotency-Key); returns that answer.
   */
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
    if (!task) {
      const archived = await this.tasks.archivedMonthOf(upstreamTaskId, ctx.projectId);
      if (archived) throw archivedTask(taskIdParam, archived);
      throw notFound; // another project's task looks exactly like a missing one
    }

    let res;
    try {
      res = await this.upstream.client.open('GET', VENDOR_PATHS.task(upstreamTaskId));
    } catch (error) {
      this.metrics.upstreamErrors.inc({ kind: `poll_${(error as UpstreamError).outcome ?? 'unknown'}` });
      throw ApiError.badGateway(`polling upstream failed: ${(error as Error).message}`);
    }
    if ('stream' in res) return this.streams.poll(task, res);
    const text = this.upstream.redactor.redact(res.body.toString('utf8'));
    if (res.status !== 200 && isTaskNotFound(res.status, safeJson(text))) return this.vendorForgot(task);
    if (res.status !== 200) {
      throw ApiError.badGateway(
        `upstream answered the poll with HTTP ${res.status}`,
        upstreamSummary(this.upstream.redactor, res.status, safeJson(text)),
      );
    }
    const state = upstreamState(safeJson(text));
    if (!state) throw ApiError.badGateway('upstream answered the poll with a body that is not a task record');
    await this.settlement.apply(task, state);
    return { status: 200, contentType: res.contentType || 'application/json', body: text };
  }
}
