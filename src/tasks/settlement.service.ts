/**
 * Turns a terminal upstream task record into a charge and settles it exactly once. Whoever sees
 * the terminal state first (a client poll or the background poller) settles; the others find it
 * done (spendgate_settle returns false for them).
 */
import { Inject, Injectable } from '@nestjs/common';
import { isObject, objectAt, safeJson } from '../common/json.js';
import { Database, DATABASE } from '../database/database.js';
import { LedgerService } from '../ledger/ledger.service.js';
import { price, type PriceBasis } from '../pricing/engine.js';
import { ZERO } from '../pricing/money.js';
import type { Charge, Unit } from '../pricing/pricing.types.js';
import { PriceBookService } from '../pricing/price-book.service.js';
import { MetricsService } from '../health/metrics.service.js';
import { isVendorTaskStatus } from '../upstream/acceptance.js';
import { isEventStream, readEventStream, type StreamFacts } from '../upstream/event-stream.js';

/** The columns settlement needs; selected by the poller and the poll endpoint. */
export interface TaskForSettlement {
  id: string;
  model: string;
  unit: Unit;
  price_basis: PriceBasis;
  price_book_version: number;
  failure_policy: 'release' | 'charge';
}

export const TASK_FOR_SETTLEMENT_COLUMNS = `t.id::text AS id, t.model, t.unit, t.price_basis, t.price_book_version,
  (SELECT failure_policy FROM project p WHERE p.id = t.project_id) AS failure_policy`;

export type UpstreamState = { status: 'processing' } | { status: 'ready' | 'failed'; usage: unknown };

/** Reads `data.status` (and `data.usage`) from a polled body; undefined when it is not a task record. */
export function upstreamState(body: unknown): UpstreamState | undefined {
  const data = isObject(body) ? objectAt(body, 'data') : undefined;
  return data && stateOf(data.status, data.usage);
}

/** The last task state a stream's events told; undefined when none did. */
export function streamState(facts: StreamFacts): UpstreamState | undefined {
  return stateOf(facts.status, facts.usage);
}

function stateOf(status: unknown, usage: unknown): UpstreamState | undefined {
  if (!isVendorTaskStatus(status)) return undefined;
  return status === 'processing' ? { status } : { status, usage };
}

/** A polled answer, JSON or an event stream, as a task state; undefined when it is neither. */
export function polledState(contentType: string, text: string): UpstreamState | undefined {
  if (isEventStream(contentType)) return streamState(readEventStream(text));
  return upstreamState(safeJson(text));
}

@Injectable()
export class SettlementService {
  constructor(
    @Inject(DATABASE) private readonly db: Database,
    private readonly ledger: LedgerService,
    private readonly priceBooks: PriceBookService,
    private readonly metrics: MetricsService,
  ) {}

  async findByUpstreamId(upstreamTaskId: string, projectId: string): Promise<TaskForSettlement | undefined> {
    const { rows } = await this.db.query<TaskForSettlement>(
      `SELECT ${TASK_FOR_SETTLEMENT_COLUMNS} FROM task t WHERE t.upstream_task_id = $1 AND t.project_id = $2`,
      [upstreamTaskId, projectId],
    );
    return rows[0];
  }

  async findById(taskId: string): Promise<TaskForSettlement | undefined> {
    const { rows } = await this.db.query<TaskForSettlement>(`SELECT ${TASK_FOR_SETTLEMENT_COLUMNS} FROM task t WHERE t.id = $1`, [taskId]);
    return rows[0];
  }

  /**
   * Settles when the state is terminal; returns true when this call did the settling.
   * `review`, when given, flags the task for review with that reason added to its warnings.
   */
  async apply(task: TaskForSettlement, state: UpstreamState, review?: string): Promise<boolean> {
    if (state.status === 'processing') return false;
    const priced = this.chargeFor(task, state);
    const charge = review ? { ...priced, warnings: [...priced.warnings, review], needsReview: true } : priced;
    const { settled, overrun } = await this.ledger.settle({
      taskId: task.id,
      status: state.status,
      charge,
      usage: state.usage,
      rollup: state.status === 'ready' || task.failure_policy === 'charge' ? rollupOf(task.price_basis, charge) : {},
    });
    if (settled) this.metrics.settled(state.status, charge, overrun);
    return settled;
  }

  private chargeFor(task: TaskForSettlement, state: Exclude<UpstreamState, { status: 'processing' }>): Charge {
    const book = this.priceBooks.version(task.price_book_version) ?? this.priceBooks.inForce();
    const pricedTask = { model: task.model, unit: task.unit, basis: task.price_basis };
    if (state.status === 'failed' && task.failure_policy === 'release') {
      return { unit: task.unit, exactness: 'EXACT', amount: ZERO, lines: [], warnings: ['task failed: hold released, nothing charged'], needsReview: false };
    }
    return price(pricedTask, state.usage, book);
  }
}

/** Counters for spend_rollup: token sums per class, video seconds, images. */
function rollupOf(basis: PriceBasis, charge: Charge): Record<string, string> {
  if (basis.kind === 'video') return { video_seconds: String(basis.duration ?? 0) };
  if (basis.kind === 'image') return { images: String(basis.n ?? 1) };
  if (charge.exactness !== 'EXACT') return {};
  const qty = (component: string) => charge.lines.filter((l) => l.component === component).reduce((s, l) => s.plus(l.quantity), ZERO);
  return {
    input_tokens: qty('input').toFixed(),
    output_tokens: qty('output').toFixed(),
    cache_read_tokens: qty('cache_read').toFixed(),
    cache_write_5m_tokens: qty('cache_write_5m').toFixed(),
    cache_write_1h_tokens: qty('cache_write_1h').toFixed(),
    cache_write_tokens: qty('cache_write').toFixed(),
  };
}
