/**
 * The task store: the one place that writes task rows without moving money, and reads the task
 * facts settlement needs. Money movements that also change a task (the hold creates it; settle,
 * reject and resolve end it) are the ledger's SQL functions (ledger.service.ts), each atomic with
 * its ledger entries.
 *
 * How a task's status changes, and where:
 *
 * | from                     | to          | by                                                    |
 * |--------------------------|-------------|-------------------------------------------------------|
 * | (new)                    | submitting  | the hold: spendgate_place_holds (ledger)              |
 * | submitting, unknown      | processing  | recordAccepted: the vendor accepted it (here)         |
 * | submitting               | unknown     | markUnknown: no answer could be known (here)          |
 * | submitting (abandoned)   | unknown     | sweepAbandoned: its gateway died mid-call (here)      |
 * | submitting, unknown      | rejected    | the vendor refused: spendgate_reject (ledger)         |
 * | processing, unknown, …   | ready/failed| the vendor said so: spendgate_settle (ledger)         |
 * | unknown                  | (resolved)  | an operator: spendgate_resolve (ledger), stays unknown|
 *
 * Besides status, the poller's schedule (next_poll_at, poll_attempts) is kept here.
 */
import { Inject, Injectable } from '@nestjs/common';
import { Batcher } from '../common/batcher.js';
import { isDatabaseUnavailable } from '../common/error.filter.js';
import { Database, DATABASE } from '../database/database.js';
import type { PriceBasis } from '../pricing/engine.js';
import type { Unit } from '../pricing/pricing.types.js';

/** The vendor's acceptance of a held task. */
export interface AcceptedRecord {
  taskId: string;
  upstreamId: string;
  upstreamTaskId: string;
  responseBody: string;
}

/** An answer the gateway gave for a task of unknown outcome, kept so a repeated Idempotency-Key gets it again. */
export interface StoredAnswer {
  status: number;
  body: string;
}

/** The columns settlement needs; read by the poller and the poll endpoint. */
export interface TaskForSettlement {
  id: string;
  model: string;
  unit: Unit;
  price_basis: PriceBasis;
  price_book_version: number;
  failure_policy: 'release' | 'charge';
}

/** A task the poller claimed: what settlement needs, and what polling it needs. */
export interface DueTask extends TaskForSettlement {
  upstream_task_id: string;
  poll_attempts: number;
}

const FOR_SETTLEMENT = `t.id::text AS id, t.model, t.unit, t.price_basis, t.price_book_version,
  (SELECT failure_policy FROM project p WHERE p.id = t.project_id) AS failure_policy`;

/** How long a claimed task is the claimer's before another instance may poll it. */
const LEASE_SECONDS = 30;

@Injectable()
export class TaskStore {
  private readonly accepted: Batcher<AcceptedRecord, boolean>;

  constructor(@Inject(DATABASE) private readonly db: Database) {
    // A row the vendor answered wrongly (a taskId already recorded for another task) must not fail
    // the innocent ones in its batch: on a data error, each record is written alone.
    this.accepted = new Batcher((items) => this.recordAcceptedBatch(items), { maxBatch: 512, maxInFlight: 4, isolate: (error) => !isDatabaseUnavailable(error) });
  }

  /** The vendor accepted: the task is now `processing` and will be polled. Batched with concurrent calls. */
  recordAccepted(record: AcceptedRecord): Promise<boolean> {
    return this.accepted.push(record);
  }

  /**
   * The outcome cannot be known: keep the hold, flag for review, and keep the answer the client
   * got, so that a repeated Idempotency-Key gets the same answer, never a second vendor task.
   */
  async markUnknown(taskId: string, reason: string, answer?: StoredAnswer): Promise<void> {
    await this.db.query(
      `UPDATE task SET status = 'unknown', needs_review = true, review_reason = $2, updated_at = clock_timestamp(),
                       response_body = coalesce($3, response_body), response_status = coalesce($4, response_status)
       WHERE id = $1 AND status = 'submitting'`,
      [taskId, reason, answer?.body ?? null, answer?.status ?? null],
    );
  }

  /**
   * Tasks left in `submitting` longer than any upstream call can take belong to a gateway that
   * died between the hold and the upstream's answer: they become `unknown`, hold kept. "Left" is
   * counted from updated_at, which a relayed stream keeps fresh (see stillStreaming).
   */
  async sweepAbandoned(olderThanMs: number): Promise<number> {
    const { rowCount } = await this.db.query(
      `UPDATE task SET status = 'unknown', needs_review = true, updated_at = clock_timestamp(),
              review_reason = 'the gateway stopped between the hold and the upstream answer'
       WHERE status = 'submitting' AND updated_at < clock_timestamp() - make_interval(secs => $1::double precision / 1000)`,
      [olderThanMs],
    );
    return rowCount ?? 0;
  }

  /** A stream for this task is still being relayed: it is not abandoned. */
  async stillStreaming(taskId: string): Promise<void> {
    await this.db.query(`UPDATE task SET updated_at = clock_timestamp() WHERE id = $1 AND status = 'submitting'`, [taskId]);
  }

  /**
   * Claims up to `limit` tasks due for a poll, each with a lease (next_poll_at moved ahead), with
   * FOR UPDATE SKIP LOCKED: two instances never poll one task at once.
   */
  async claimDue(limit: number): Promise<DueTask[]> {
    const { rows } = await this.db.query<DueTask>(
      `UPDATE task t SET next_poll_at = clock_timestamp() + interval '${LEASE_SECONDS} seconds', poll_attempts = t.poll_attempts + 1
       WHERE t.id IN (SELECT id FROM task WHERE status = 'processing' AND next_poll_at <= clock_timestamp()
                      ORDER BY next_poll_at LIMIT $1 FOR UPDATE SKIP LOCKED)
       RETURNING ${FOR_SETTLEMENT}, t.upstream_task_id::text AS upstream_task_id, t.poll_attempts`,
      [limit],
    );
    return rows;
  }

  /** A polled task that did not settle: its next poll after `delayMs`. */
  async pollAgainIn(taskId: string, delayMs: number): Promise<void> {
    await this.db.query(
      `UPDATE task SET next_poll_at = clock_timestamp() + make_interval(secs => $2::double precision / 1000)
       WHERE id = $1 AND status = 'processing'`,
      [taskId, delayMs],
    );
  }

  async findByUpstreamId(upstreamTaskId: string, projectId: string): Promise<TaskForSettlement | undefined> {
    const { rows } = await this.db.query<TaskForSettlement>(`SELECT ${FOR_SETTLEMENT} FROM task t WHERE t.upstream_task_id = $1 AND t.project_id = $2`, [
      upstreamTaskId,
      projectId,
    ]);
    return rows[0];
  }

  async findById(taskId: string): Promise<TaskForSettlement | undefined> {
    const { rows } = await this.db.query<TaskForSettlement>(`SELECT ${FOR_SETTLEMENT} FROM task t WHERE t.id = $1`, [taskId]);
    return rows[0];
  }

  private async recordAcceptedBatch(items: AcceptedRecord[]): Promise<boolean[]> {
    // Typed arrays, not a JSON record set: unnest() of them yields a known row count. The
    // function pins the plan to one primary-key probe per row (see its migration for why).
    const { rows } = await this.db.prepared<{ id: string }>(
      'record-accepted',
      'SELECT spendgate_record_accepted($1::bigint[], $2::text[], $3::bigint[], $4::text[]) AS id',
      [items.map((r) => r.taskId), items.map((r) => r.upstreamId), items.map((r) => r.upstreamTaskId), items.map((r) => r.responseBody)],
    );
    const done = new Set(rows.map((r) => String(r.id)));
    return items.map((r) => done.has(r.taskId));
  }
}
