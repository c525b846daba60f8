/**
 * The money movements, each one call into the ledger's SQL functions (their current bodies:
 * prisma/schema.sql): the hold at submission (batched: group commit; it creates the task; which
 * SQL call a batch takes: holds.ts),
 * settlement exactly once, release on an upstream refusal, adjustments, and an operator's
 * resolution. Task-row writes that move no money are the task store's (tasks/task-store.ts).
 */
import { Inject, Injectable } from '@nestjs/common';
import { ApiError } from '../common/api-error.js';
import { Batcher } from '../common/batcher.js';
import { Database, DATABASE } from '../database/database.js';
import { MixedUnitsError, type Decimal, type Money } from '../pricing/money.js';
import type { Charge, ChargeLine } from '../pricing/pricing.types.js';
import { holdAlone, holdInBatch, linesPayload, type HoldOutcome, type HoldRequest } from './holds.js';

export type { BudgetScope, HoldOutcome, HoldRequest, LimitKind, LimitRefusal } from './holds.js';

export interface Settlement {
  taskId: string;
  status: 'ready' | 'failed';
  charge: Charge;
  usage: unknown;
  rollup: Record<string, string>;
}

export function linesJson(lines: readonly ChargeLine[]): string {
  return JSON.stringify(linesPayload(lines));
}

/**
 * Holds are batched per lane, a lane being a fixed slice of the projects: batches of different
 * lanes touch different projects, so they never wait for each other's project locks and run on
 * separate connections in parallel; one hot project stays in one lane.
 *
 * A lane may have a second batch in flight (`Pipeline` in batcher.ts): a batch writes its tasks
 * and hold entries before it takes the project's lock (spendgate_place_holds), so the second one
 * writes while the first raises balances and commits, on a core the other lane leaves idle. It
 * goes once 24 requests wait (a burst of 48 as two halves), and only while fewer than two
 * batches are in flight over both lanes. Why (bench/FINDINGS.md, "Writing before the lock"): a
 * batch's fixed cost, ≈0.45 ms of PostgreSQL, is repaid by the ≈45 µs per hold of writing it
 * overlaps only from about 20 holds: 64 concurrent holds on one project matching four budgets,
 * one batch at a time 9,900/s, two halves 17,000/s; chat submissions (batches of ~7) and 500
 * requests a second (one or two) stay one batch at a time, as second batches there only queued
 * for the lock (p99 +2 ms). Spread over 100 projects both lanes already keep both cores busy,
 * and a second batch per lane cost a quarter (12,600 against 17,000/s): hence the shared limit.
 */
const HOLD_LANES = 2;
const HOLD_SECOND_BATCH_FROM = 24;
const HOLD_BATCHES_IN_FLIGHT = HOLD_LANES; // over all lanes, unless a lane's first

@Injectable()
export class LedgerService {
  private readonly holdLanes: Array<Batcher<HoldRequest, HoldOutcome>>;

  constructor(@Inject(DATABASE) private readonly db: Database) {
    // shared by the lanes
    const pipeline = { from: HOLD_SECOND_BATCH_FROM, slots: { inFlight: 0, max: HOLD_BATCHES_IN_FLIGHT } };
    this.holdLanes = Array.from(
      { length: HOLD_LANES },
      () =>
        new Batcher<HoldRequest, HoldOutcome>((items) => this.placeHolds(items), {
          maxBatch: 256,
          maxInFlight: 2,
          pipeline,
        }),
    );
  }

  /** Atomically checks every budget of the unit and places the hold; batched with concurrent calls. */
  hold(request: HoldRequest): Promise<HoldOutcome> {
    return this.holdLanes[laneOf(request.projectId)]!.push(request);
  }

  /** Settles exactly once; `overrun` is charge − hold when the charge passed the hold (decisions §6). */
  async settle(s: Settlement): Promise<{ settled: boolean; overrun: string | null }> {
    const c = s.charge;
    const { rows } = await this.db.prepared<{ settled: boolean; overrun: string | null }>(
      'settle',
      `SELECT settled, overrun::text FROM spendgate_settle($1, $2::"TaskStatus", $3::numeric, $4::"Exactness", $5, $6::text[], $7, $8, $9::jsonb, $10::jsonb, $11::jsonb)`,
      [
        s.taskId,
        s.status,
        c.amount.toFixed(),
        c.exactness,
        c.tier ?? null,
        c.warnings,
        c.needsReview,
        c.needsReview ? c.warnings.join('; ') : null,
        s.usage === undefined ? null : JSON.stringify(s.usage),
        linesJson(c.lines),
        JSON.stringify(s.rollup),
      ],
    );
    return rows[0]!;
  }

  /** The upstream refused with a definite answer (or was never reached): release the hold. */
  async releaseRejected(taskId: string, reason: string): Promise<boolean> {
    const { rows } = await this.db.query<{ ok: boolean }>('SELECT spendgate_release_rejected($1, $2) AS ok', [
      taskId,
      reason,
    ]);
    return rows[0]!.ok;
  }

  /**
   * Holds this gateway placed but could not confirm and never sent (gateway/unsent-holds.ts):
   * each still `submitting` is released and rejected. Answers the tasks released.
   */
  async releaseUnsent(refs: readonly string[], reason: string): Promise<Array<{ ref: string; taskId: string }>> {
    const { rows } = await this.db.query<{ ref: string; task_id: string }>(
      'SELECT submission_ref::text AS ref, task_id::text FROM spendgate_release_unsent($1::uuid[], $2)',
      [refs, reason],
    );
    return rows.map((r) => ({ ref: r.ref, taskId: r.task_id }));
  }

  /**
   * An operator's decision on a task under review (decisions §10): CHARGE `amount` (the hold by
   * default) or RELEASE, with a reason. Returns what the decision added to spend.
   */
  async resolve(
    taskId: string,
    outcome: 'CHARGE' | 'RELEASE',
    amount: Decimal | undefined,
    reason: string,
    who = 'operator',
  ): Promise<string> {
    try {
      const { rows } = await this.db.query<{ delta: string }>(
        'SELECT spendgate_resolve($1, $2, $3::numeric, $4)::text AS delta',
        [taskId, outcome, amount?.toFixed() ?? null, reason],
      );
      // The vendor's open differences on the task (decisions §14): closed where the net now equals
      // the vendor's figure; one still differing keeps the task in the review queue. Run in the
      // caller's transaction when it has one (resolveTask's, with its audit record).
      await this.db.query('SELECT spendgate_vendor_items_settled($1, $2, $3)', [taskId, who, reason]);
      return rows[0]!.delta;
    } catch (error) {
      // The function re-checks under the task's row lock what the caller checked before: a
      // resolution that lost a race, or a task that settled meanwhile, is answered as such.
      const { code, message } = error as { code?: string; message: string };
      if (code === 'P0002') throw ApiError.notFound(message);
      if (code === '23505' || code === '23514') throw ApiError.conflict(message);
      throw error;
    }
  }

  async adjust(projectId: string, amount: Money, reason: string, taskId?: string, at?: Date): Promise<string> {
    const { rows } = await this.db.query<{ id: string }>(
      `SELECT spendgate_adjust($1, $2::"Unit", $3::numeric, $4, $5, coalesce($6::timestamptz, clock_timestamp())) AS id`,
      [projectId, amount.unit, amount.toFixed(), reason, taskId ?? null, at ?? null],
    );
    return rows[0]!.id;
  }

  /**
   * The first instant of the gateway's first month of activity (the month its first project was
   * created or its first task accepted): no correction is dated before it (decisions §16), so one
   * typo cannot put a month of 1970 in front of every close.
   */
  async firstMonthOfActivity(): Promise<Date> {
    const { rows } = await this.db.query<{ at: Date | null }>(
      `SELECT date_trunc('month', least((SELECT min(created_at) FROM project),
                                        (SELECT min(f.accepted_at) FROM project p, LATERAL (SELECT accepted_at FROM task WHERE project_id = p.id ORDER BY accepted_at LIMIT 1) f)) AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS at`,
    );
    return rows[0]?.at ?? new Date();
  }

  private async placeHolds(items: HoldRequest[]): Promise<HoldOutcome[]> {
    for (const r of items) if (r.hold.unit !== r.quote.unit) throw new MixedUnitsError(r.hold.unit, r.quote.unit);
    if (items.length === 1) {
      const alone = await holdAlone(this.db, items[0]!);
      if (alone) return [alone];
    }
    return holdInBatch(this.db, items);
  }
}

function laneOf(projectId: string): number {
  // UUIDs are random: their last hex digits spread projects evenly over the lanes.
  return parseInt(projectId.slice(-2), 16) % HOLD_LANES;
}
