/**
 * Turns a terminal upstream task record into a charge and settles it exactly once. Whoever sees
 * the terminal state first (a client poll or the background poller) settles; the others find it
 * done (spendgate_settle returns false for them).
 */
import { Injectable } from '@nestjs/common';
import { LedgerService } from '../ledger/ledger.service.js';
import { price, type PriceBasis } from '../pricing/engine.js';
import { ZERO } from '../pricing/money.js';
import type { Charge } from '../pricing/pricing.types.js';
import { PriceBookService } from '../pricing/price-book.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { finish, step, TracingService } from '../telemetry/tracing.service.js';
import { SpanKind } from '@opentelemetry/api';
import type { UpstreamState } from '../upstream/vendor-protocol.js';
import type { TaskForSettlement } from './task-store.js';

@Injectable()
export class SettlementService {
  constructor(
    private readonly ledger: LedgerService,
    private readonly priceBooks: PriceBookService,
    private readonly metrics: MetricsService,
    private readonly tracing: TracingService,
  ) {}

  /**
   * Settles when the state is terminal; returns true when this call did the settling.
   * `review`, when given, flags the task for review with that reason added to its warnings.
   */
  async apply(task: TaskForSettlement, state: UpstreamState, review?: string): Promise<boolean> {
    if (state.status === 'processing') return false;
    const t = this.tracing.start(
      'spendgate.settlement',
      () => ({
        'gen_ai.request.model': task.model,
        'spendgate.task.id': task.id,
        'spendgate.task.status': state.status,
      }),
      SpanKind.INTERNAL,
    );
    try {
      const priced = await step(t, 'price', () => this.chargeFor(task, state));
      const charge = review ? { ...priced, warnings: [...priced.warnings, review], needsReview: true } : priced;
      const { settled, overrun } = await step(t, 'ledger', () =>
        this.ledger.settle({
          taskId: task.id,
          status: state.status,
          charge,
          usage: state.usage,
          rollup:
            state.status === 'ready' || task.failure_policy === 'charge' ? rollupOf(task.price_basis, charge) : {},
        }),
      );
      if (settled) this.metrics.settled(state.status, charge, overrun);
      t?.root.setAttributes({ 'spendgate.settled': settled, ...(settled ? costAttributes(charge) : {}) });
      finish(t);
      return settled;
    } catch (error) {
      finish(t, error);
      throw error;
    }
  }

  /**
   * Priced with the task's own price-book version, loaded if this instance has not seen it yet: never another
   * (decisions §3).
   */
  private async chargeFor(
    task: TaskForSettlement,
    state: Exclude<UpstreamState, { status: 'processing' }>,
  ): Promise<Charge> {
    if (state.status === 'failed' && task.failure_policy === 'release') {
      return {
        unit: task.unit,
        exactness: 'EXACT',
        amount: ZERO,
        lines: [],
        warnings: ['task failed: hold released, nothing charged'],
        needsReview: false,
      };
    }
    const book = await this.priceBooks.ensure(task.price_book_version);
    return price({ model: task.model, unit: task.unit, basis: task.price_basis }, state.usage, book);
  }
}

/**
 * Counters for spend_rollup: token sums per class, video seconds, images; and the list amount when
 * a contract term changed the charge (decisions §19: the roll-up keeps list minus contracted).
 */
function rollupOf(basis: PriceBasis, charge: Charge): Record<string, string> {
  const counts = countsOf(basis, charge);
  return charge.listAmount ? { ...counts, list_amount: charge.listAmount.toFixed() } : counts;
}

function countsOf(basis: PriceBasis, charge: Charge): Record<string, string> {
  if (basis.kind === 'video') return { video_seconds: String(basis.duration ?? 0) };
  if (basis.kind === 'image') return { images: String(basis.n ?? 1) };
  if (charge.exactness !== 'EXACT') return {};
  const qty = (component: string) => quantityOf(charge, [component]);
  return {
    input_tokens: qty('input').toFixed(),
    output_tokens: qty('output').toFixed(),
    cache_read_tokens: qty('cache_read').toFixed(),
    cache_write_5m_tokens: qty('cache_write_5m').toFixed(),
    cache_write_1h_tokens: qty('cache_write_1h').toFixed(),
    cache_write_tokens: qty('cache_write').toFixed(),
  };
}

/**
 * A settlement's gen_ai attributes (decisions §21): the cost (a float for dashboards, its exact text
 * beside it) and its unit, and for chat the token counts. Never the prompt or the answer.
 */
function costAttributes(charge: Charge): Record<string, string | number> {
  return {
    'gen_ai.usage.cost': Number(charge.amount.toFixed()),
    'spendgate.cost.amount': charge.amount.toFixed(),
    'spendgate.cost.unit': charge.unit,
    'spendgate.cost.exactness': charge.exactness,
    ...tokensOf(charge),
  };
}

/** gen_ai.usage.input_tokens and output_tokens, from the charge's lines (chat only). */
function tokensOf(charge: Charge): Record<string, number> {
  const sum = (components: string[]) => quantityOf(charge, components);
  if (!charge.lines.some((l) => l.component === 'input' || l.component === 'output')) return {};
  return {
    'gen_ai.usage.input_tokens': sum([
      'input',
      'cache_read',
      'cache_write_5m',
      'cache_write_1h',
      'cache_write',
    ]).toNumber(),
    'gen_ai.usage.output_tokens': sum(['output']).toNumber(),
  };
}

/** The quantity the charge's lines of these components add up to (tokens of a class, for chat). */
function quantityOf(charge: Charge, components: string[]) {
  return charge.lines.filter((l) => components.includes(l.component)).reduce((s, l) => s.plus(l.quantity), ZERO);
}
