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
 * | submitting, unknown      | rejected    | the vendor refused: spendgate_release_rejected (ledger)         |
 * | processing, unknown, …   | ready/failed| the vendor said so: spendgate_settle (ledger)         |
 * | unknown                  | (resolved)  | an operator: spendgate_resolve (ledger), stays unknown|
 *
 * Besides status, the poller's schedule (next_poll_at, poll_attempts) is kept here.
 */
import { archivedMonthOf } from './archived-tasks.js';
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
  kind: string;
  accepted_at: Date;
  /**
   * When its poll may go, in ms from the claim's answer (negative: the slot passed while it was answered): its slot in
   * the pace shared by every instance.
   */
  slot_ms: number;
}

/** What a client's poll is told when the vendor does not know the task: our own record of it. */
export interface TaskRecordView {
  upstreamId: string | null;
  upstreamTaskId: string | null;
  model: string;
  kind: string;
  status: string;
  needsReview: boolean;
  reviewReason: string | null;
}

/** How long a task has been in flight, as a person reads it ("2 days 03:04:05"). */
const AGE = `justify_interval(date_trunc('second', clock_timestamp() - accepted_at))::text`;

const FOR_SETTLEMENT = `t.id::text AS id, t.model, t.unit, t.price_basis, t.price_book_version,
  (SELECT failure_policy FROM project p WHERE p.id = t.project_id) AS failure_policy`;

/** How long a claimed task is the claimer's before another instance may poll it. */
const LEASE_SECONDS = 30;
/**
 * Tasks still submitting, held more than $1 milliseconds ago, found through the open tasks' index
 * (task_open: next_poll_at of every unsettled task that has one): a task is held with its first
 * poll's time (spendgate_first_poll_at of its acceptance) and keeps it until it is recorded, and
 * updated_at and accepted_at are never before its acceptance. The bound is read from now() (the
 * statement's start): a bound from clock_timestamp(), volatile, is no index condition, and the
 * sweep read every open task. A task that comes of age while the statement runs waits for the next round.
 */
const SUBMITTING_BEFORE = `settled_at IS NULL AND status = 'submitting'
   AND next_poll_at < spendgate_first_poll_at(now() - make_interval(secs => $1::double precision / 1000))`;
/** "Not found" this many times in a row (over TASK_NOT_FOUND_AFTER_MS) makes a task unknown. */
export const MISSING_POLLS = 3;

@Injectable()
export class TaskStore {
  private readonly accepted: Batcher<AcceptedRecord, boolean>;

  constructor(@Inject(DATABASE) private readonly db: Database) {
    // A row the vendor answered wrongly (a taskId already recorded for another task) must not fail
    // the innocent ones in its batch: on a data error, each record is written alone.
    this.accepted = new Batcher((items) => this.recordAcceptedBatch(items), {
      maxBatch: 512,
      maxInFlight: 4,
      isolate: (error) => !isDatabaseUnavailable(error),
    });
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
      `UPDATE task SET status = 'unknown', needs_review = true, review_reason = $2, updated_at = clock_timestamp(), next_poll_at = NULL,
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
      `UPDATE task SET status = 'unknown', needs_review = true, updated_at = clock_timestamp(), next_poll_at = NULL,
              review_reason = 'the gateway stopped between the hold and the upstream answer'
       WHERE ${SUBMITTING_BEFORE} AND updated_at < clock_timestamp() - make_interval(secs => $1::double precision / 1000)`,
      [olderThanMs],
    );
    return rowCount ?? 0;
  }

  /** A stream for this task is still being relayed: it is not abandoned. */
  async stillStreaming(taskId: string): Promise<void> {
    await this.db.query(`UPDATE task SET updated_at = clock_timestamp() WHERE id = $1 AND status = 'submitting'`, [
      taskId,
    ]);
  }

  /**
   * Claims up to `limit` tasks due for a poll, youngest first, each with a lease, with FOR UPDATE
   * SKIP LOCKED (two instances never poll one task at once), and reserves their slots in the pace
   * shared by every instance (at most `perSecond` polls a second over all of them, each instance
   * its fair share): spendgate_claim_polls.
   */
  async claimDue(limit: number, perSecond: number, instance: string): Promise<DueTask[]> {
    const { rows } = await this.db.query<DueTask>('SELECT * FROM spendgate_claim_polls($1, $2, $3, $4)', [
      instance,
      limit,
      perSecond,
      LEASE_SECONDS,
    ]);
    return rows;
  }

  /**
   * A polled task that did not settle: its next poll after `delayMs`. `answered`: the vendor
   * answered with the task's record (a "not found" streak ends). Past `reviewAfterMs` in flight
   * it is flagged for review once (its task.needs_review event comes from the trigger), with its
   * age and polls; its hold stays until it settles or an operator resolves it.
   */
  async pollAgainIn(taskId: string, delayMs: number, reviewAfterMs: number, answered: boolean): Promise<void> {
    await this.db.query(
      `UPDATE task SET next_poll_at = clock_timestamp() + make_interval(secs => $2::double precision / 1000),
              missing_polls = CASE WHEN $4 THEN 0 ELSE missing_polls END,
              missing_since = CASE WHEN $4 THEN NULL ELSE missing_since END,
              needs_review = needs_review OR accepted_at < clock_timestamp() - make_interval(secs => $3::double precision / 1000),
              review_reason = CASE WHEN NOT needs_review AND accepted_at < clock_timestamp() - make_interval(secs => $3::double precision / 1000)
                                   THEN format('still processing at the vendor %s after it was accepted (%s polls); its hold is kept until it settles or an operator resolves it', ${AGE}, poll_attempts)
                                   ELSE review_reason END
       WHERE id = $1 AND status = 'processing'`,
      [taskId, delayMs, reviewAfterMs, answered],
    );
  }

  /**
   * The vendor answered "not found" for the task. Once it has said so `3` times in a row over at
   * least `windowMs`, the task is `unknown` and flagged for review (hold kept, no more polls);
   * until then it is polled again after `delayMs`. Returns the task's status after.
   */
  async vendorMissing(taskId: string, delayMs: number, windowMs: number): Promise<string | undefined> {
    const { rows } = await this.db.query<{ status: string }>(
      `WITH seen AS (
         SELECT id, missing_polls + 1 AS polls, coalesce(missing_since, clock_timestamp()) AS since FROM task WHERE id = $1 AND status = 'processing' FOR UPDATE
       ), gone AS (SELECT seen.*, seen.polls >= ${MISSING_POLLS} AND seen.since <= clock_timestamp() - make_interval(secs => $3::double precision / 1000) AS gone FROM seen)
       UPDATE task t SET missing_polls = g.polls, missing_since = g.since, updated_at = clock_timestamp(),
              status = CASE WHEN g.gone THEN 'unknown'::"TaskStatus" ELSE t.status END,
              needs_review = t.needs_review OR g.gone,
              review_reason = CASE WHEN g.gone THEN format('the vendor answered "not found" to %s polls over %s: the task is unknown, its hold is kept for review',
                                                           g.polls, justify_interval(date_trunc('second', clock_timestamp() - g.since))::text)
                                   ELSE t.review_reason END,
              next_poll_at = CASE WHEN g.gone THEN NULL ELSE clock_timestamp() + make_interval(secs => $2::double precision / 1000) END
       FROM gone g WHERE t.id = g.id
       RETURNING t.status::text AS status`,
      [taskId, delayMs, windowMs],
    );
    return rows[0]?.status;
  }

  /**
   * Tasks still `submitting` past their kind's review age (a stream relayed for that long) are
   * flagged for review, once. Processing tasks are flagged as they are polled (pollAgainIn).
   * updated_at is left alone: it says a submission is still alive (sweepAbandoned), and a flag is
   * no sign of life: a dead gateway's task flagged first must still be swept to unknown.
   */
  async flagAgedSubmitting(reviewAfterMs: (kind: string) => number): Promise<number> {
    const ages = ['chat', 'image', 'video'].map(reviewAfterMs);
    const { rowCount } = await this.db.query(
      `UPDATE task SET needs_review = true,
              review_reason = format('still submitting %s after it was accepted; its hold is kept until it settles or an operator resolves it', ${AGE})
       WHERE ${SUBMITTING_BEFORE} AND NOT needs_review
         AND accepted_at < clock_timestamp() - make_interval(secs => (CASE kind WHEN 'chat' THEN $2 WHEN 'image' THEN $3 ELSE $4 END)::double precision / 1000)`,
      [Math.min(...ages), ...ages],
    );
    return rowCount ?? 0;
  }

  /** A project's task as we recorded it, for a client's poll the vendor cannot answer. */
  async recordView(taskId: string): Promise<TaskRecordView | undefined> {
    const { rows } = await this.db.query<TaskRecordView>(
      `SELECT upstream_id AS "upstreamId", upstream_task_id::text AS "upstreamTaskId", model, kind, status::text AS status,
              needs_review AS "needsReview", review_reason AS "reviewReason"
       FROM task WHERE id = $1`,
      [taskId],
    );
    return rows[0];
  }

  async findByUpstreamId(upstreamTaskId: string, projectId: string): Promise<TaskForSettlement | undefined> {
    const { rows } = await this.db.query<TaskForSettlement>(
      `SELECT ${FOR_SETTLEMENT} FROM task t WHERE t.id = (SELECT u.task_id FROM task_upstream u WHERE u.upstream_task_id = $1) AND t.project_id = $2`,
      [upstreamTaskId, projectId],
    );
    return rows[0];
  }

  /** The archived month of a project's task the vendor numbered (archived-tasks.ts). */
  archivedMonthOf(upstreamTaskId: string, projectId: string): Promise<string | undefined> {
    return archivedMonthOf(this.db, { upstreamTaskId }, [projectId]);
  }

  async findById(taskId: string): Promise<TaskForSettlement | undefined> {
    const { rows } = await this.db.query<TaskForSettlement>(`SELECT ${FOR_SETTLEMENT} FROM task t WHERE t.id = $1`, [
      taskId,
    ]);
    return rows[0];
  }

  private async recordAcceptedBatch(items: AcceptedRecord[]): Promise<boolean[]> {
    if (items.length === 1) {
      // Alone (ordinary load): the same UPDATE without the batch function's plan settings (bench/FINDINGS.md).
      const r = items[0]!;
      const { rows } = await this.db.prepared<{ id: string | null }>(
        'record-one',
        'SELECT spendgate_record_one($1, $2, $3, $4) AS id',
        [r.taskId, r.upstreamId, r.upstreamTaskId, r.responseBody],
      );
      return [rows.length > 0 && rows[0]!.id !== null];
    }
    // Typed arrays, not a JSON record set: unnest() of them yields a known row count. The
    // function pins the plan to one primary-key probe per row (see its migration for why).
    const { rows } = await this.db.prepared<{ id: string }>(
      'record-accepted',
      'SELECT spendgate_record_accepted($1::bigint[], $2::text[], $3::bigint[], $4::text[]) AS id',
      [
        items.map((r) => r.taskId),
        items.map((r) => r.upstreamId),
        items.map((r) => r.upstreamTaskId),
        items.map((r) => r.responseBody),
      ],
    );
    const done = new Set(rows.map((r) => String(r.id)));
    return items.map((r) => done.has(r.taskId));
  }
}
