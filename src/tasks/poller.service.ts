/**
 * Background poller: advances tasks no client polls. Safe with several gateway instances on one
 * database: a task is claimed with a lease (TaskStore.claimDue), so two instances never poll the
 * same task at once, and settlement is exactly-once anyway.
 *
 * What a task costs the vendor falls with its age (decisions §10): it is polled again after a tenth of
 * its age (at least POLL_INTERVAL_MS, at most an hour: seconds, then minutes, then hourly), and
 * all instances together poll at most POLL_MAX_PER_SECOND times a second, each its fair share,
 * youngest tasks first (spendgate_claim_polls). A task still in flight past its kind's review age
 * is flagged for review; one the vendor keeps answering "not found" becomes unknown.
 * Each round also sweeps tasks abandoned in `submitting` by a gateway that died.
 */
import { randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { CONFIG, reviewAfterMs, type Config } from '../config/config.js';
import { UpstreamService } from '../upstream/upstream.service.js';
import { polledState } from '../upstream/event-stream.js';
import { safeJson } from '../common/json.js';
import { VENDOR_PATHS } from '../catalog/vendor-paths.js';
import { isTaskNotFound } from '../upstream/vendor-protocol.js';
import { SettlementService } from './settlement.service.js';
import { TaskStore, type DueTask } from './task-store.js';
import { Repeating } from '../common/repeating.js';

const BATCH = 50;
const MAX_DELAY_MS = 3_600_000;
/** A round keeps claiming while tasks are due, for at most this long, then lets the loop breathe. */
const ROUND_MS = 5_000;
/**
 * How late after its slot a poll may still go. With slots 1.02/cap apart, polls sent within 15 ms of
 * their slots never put more than the cap into any calendar second (spendgate_claim_polls).
 */
const LATE_MS = 15;

/** The next poll of a task that did not settle: a tenth of its age, within [interval, an hour], ±10 %. */
export function nextPollDelay(ageMs: number, intervalMs: number, random: () => number = Math.random): number {
  const base = Math.min(MAX_DELAY_MS, Math.max(intervalMs, ageMs / 10));
  return Math.round(base * (0.9 + 0.2 * random()));
}

@Injectable()
export class PollerService {
  private readonly logger = new Logger('Poller');
  private readonly loop: Repeating;
  /** This instance's name in the shared pace (poller_instance). */
  private readonly instance = `poller-${randomBytes(6).toString('hex')}`;
  private stopping = false;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly tasks: TaskStore,
    private readonly upstream: UpstreamService,
    private readonly settlement: SettlementService,
  ) {
    this.loop = new Repeating(() => this.round(), config.POLL_INTERVAL_MS, this.logger, 'poll round');
  }

  /** Grace before a `submitting` task counts as abandoned: longer than any upstream call. */
  get abandonAfterMs(): number {
    return this.config.UPSTREAM_TIMEOUT_MS + this.config.UPSTREAM_CONNECT_TIMEOUT_MS + this.config.SUBMIT_GRACE_MS;
  }

  start(): void {
    if (this.config.POLLER_ENABLED) this.loop.start();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.loop.stop();
  }

  /**
   * One round: sweep, then claim due tasks and poll each at its slot, again while tasks are due
   * (for at most ROUND_MS), settle terminal ones. Returns how many settled.
   */
  async round(): Promise<number> {
    await this.tasks.sweepAbandoned(this.abandonAfterMs);
    await this.tasks.flagAgedSubmitting((kind) => reviewAfterMs(this.config, kind));
    const started = Date.now();
    const polls: Array<Promise<boolean>> = [];
    try {
      while (!this.stopping) {
        const due = await this.tasks.claimDue(BATCH, this.config.POLL_MAX_PER_SECOND, this.instance);
        if (due.length === 0) break;
        const claimedAt = Date.now();
        for (const task of due) {
          polls.push(
            after(task.slot_ms - (Date.now() - claimedAt))
              .then(() =>
                // A poll whose slot passed while the event loop was busy is not sent late (late polls
                // bunch up past the cap): its task is due again at once, for a slot of its own.
                Date.now() - claimedAt - task.slot_ms > LATE_MS
                  ? this.tasks.pollAgainIn(task.id, 0, reviewAfterMs(this.config, task.kind), false).then(() => false)
                  : this.pollOne(task),
              )
              // The database may go away under a poll (a restart): its lease runs out and the task is
              // claimed again; nothing here may end the process (decisions §17).
              .catch((error: unknown) => {
                this.logger.warn(
                  `task ${task.upstream_task_id}: poll not recorded (${(error as Error).message}); it is polled again after its lease`,
                );
                return false;
              }),
          );
        }
        // The next claim once this one's slots have passed: the pace has none free before.
        await after(Math.max(...due.map((t) => t.slot_ms)) - (Date.now() - claimedAt));
        if (Date.now() - started > ROUND_MS) break;
      }
    } finally {
      // A claim that failed (the database went away) still waits for the polls it started: they
      // are never left to reject with no one listening.
      await Promise.allSettled(polls);
    }
    const results = await Promise.all(polls);
    return results.filter(Boolean).length;
  }

  private async pollOne(task: DueTask): Promise<boolean> {
    const delay = nextPollDelay(Date.now() - new Date(task.accepted_at).getTime(), this.config.POLL_INTERVAL_MS);
    let answered = false;
    try {
      const res = await this.upstream.client.get(VENDOR_PATHS.task(task.upstream_task_id));
      const text = res.body.toString('utf8');
      const state = res.status === 200 ? polledState(res.contentType, text) : undefined;
      if (!state && isTaskNotFound(res.status, safeJson(text))) {
        await this.tasks.vendorMissing(task.id, delay, this.config.TASK_NOT_FOUND_AFTER_MS);
        return false;
      }
      answered = state !== undefined;
      if (state && (await this.settlement.apply(task, state))) return true;
    } catch (error) {
      this.logger.debug(`task ${task.upstream_task_id}: ${(error as Error).message}`);
    }
    await this.tasks.pollAgainIn(task.id, delay, reviewAfterMs(this.config, task.kind), answered);
    return false;
  }
}

function after(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}
