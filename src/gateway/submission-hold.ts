/**
 * A submission's hold (decisions §4, §17): what it asks the ledger to hold, and what a database
 * failure while the hold is written means. Each submission gets its own reference before the hold;
 * if the database fails meanwhile, the hold may have committed, but the request was certainly not
 * sent: the client is answered 503 naming the reference, and UnsentHolds releases whatever hold
 * carries it once the database answers.
 */
import { randomUUID } from 'node:crypto';
import type { Attribution } from '../attribution/attribution.js';
import type { KeyContext } from '../auth/principals.service.js';
import type { ModelRoute } from '../catalog/catalog.types.js';
import { ApiError } from '../common/api-error.js';
import { isDatabaseUnavailable } from '../common/error.filter.js';
import type { HoldOutcome, LedgerService } from '../ledger/ledger.service.js';
import type { MetricsService } from '../metrics/metrics.service.js';
import type { Quote } from '../pricing/engine.js';
import type { Money } from '../pricing/money.js';
import { UnsentHolds } from './unsent-holds.js';

/** A request quoted: the quote, the price-book version it used, its estimate and what it holds. */
export interface Priced {
  quote: Quote;
  version: number;
  estimate: Money;
  hold: Money;
}

export class SubmissionHold {
  private readonly unsent: UnsentHolds;

  constructor(
    private readonly ledger: LedgerService,
    private readonly metrics: MetricsService,
  ) {
    this.unsent = new UnsentHolds((refs) =>
      this.ledger.releaseUnsent(refs, 'the database failed while the hold was recorded; not sent to the vendor'),
    );
  }

  async place(
    ctx: KeyContext,
    route: ModelRoute,
    priced: Priced,
    attribution: Attribution,
    idempotencyKey: string | undefined,
    hash: string | undefined,
  ): Promise<HoldOutcome> {
    const holdTimer = this.metrics.submissionStages.startTimer({ stage: 'hold' });
    const submissionRef = randomUUID();
    let held: HoldOutcome;
    try {
      held = await this.ledger.hold({
        projectId: ctx.projectId,
        apiKeyId: ctx.apiKeyId,
        model: route.id,
        family: route.family,
        kind: route.kind,
        hold: priced.hold,
        endUser: attribution.user,
        tags: attribution.tags,
        quote: priced.quote,
        priceBookVersion: priced.version,
        ...(idempotencyKey ? { idempotencyKey, requestHash: hash } : {}),
        submissionRef,
      });
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
      // The hold may have committed before the connection broke: release it once the database answers.
      this.unsent.add(submissionRef);
      throw ApiError.serviceUnavailable(
        'the database is unavailable, so the request was not sent to the vendor and nothing is charged: ' +
          'a hold recorded before the failure is released once the database answers (submissionRef names it); retry shortly',
        { submissionRef },
      );
    }
    this.metrics.holds.inc({ outcome: held.outcome });
    holdTimer();
    return held;
  }

  /** At shutdown: see UnsentHolds.stop. */
  stop(): Promise<void> {
    return this.unsent.stop();
  }
}
