/**
 * Background poller: advances tasks no client polls. Safe with several gateway instances on one
 * database: a task is claimed with FOR UPDATE SKIP LOCKED and a lease (next_poll_at moved ahead),
 * so two instances never poll the same task at once, and settlement is exactly-once anyway.
 * Each round also sweeps tasks abandoned in `submitting` by a gateway that died.
 */
import { Inject, Injectable, Logger } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config.js';
import { Database, DATABASE } from '../database/database.js';
import { LedgerService } from '../ledger/ledger.service.js';
import { UpstreamService } from '../upstream/upstream.service.js';
import { SettlementService, TASK_FOR_SETTLEMENT_COLUMNS, polledState, type TaskForSettlement } from './settlement.service.js';

const BATCH = 50;
const LEASE_SECONDS = 30;
const MAX_BACKOFF_MS = 60_000;

@Injectable()
export class PollerService {
  private readonly logger = new Logger('Poller');
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;
  private stopped = false;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    @Inject(DATABASE) private readonly db: Database,
    private readonly ledger: LedgerService,
    private readonly upstream: UpstreamService,
    private readonly settlement: SettlementService,
  ) {}

  /** Grace before a `submitting` task counts as abandoned: longer than any upstream call. */
  get abandonAfterMs(): number {
    return this.config.UPSTREAM_TIMEOUT_MS + this.config.UPSTREAM_CONNECT_TIMEOUT_MS + this.config.SUBMIT_GRACE_MS;
  }

  start(): void {
    if (!this.config.POLLER_ENABLED) return;
    const loop = () => {
      if (this.stopped) return;
      this.running = this.round()
        .catch((error) => this.logger.warn(`poll round failed: ${(error as Error).message}`))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(loop, this.config.POLL_INTERVAL_MS);
        });
    };
    this.timer = setTimeout(loop, 0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** One round: sweep, claim due tasks, poll them, settle terminal ones. Returns how many settled. */
  async round(): Promise<number> {
    await this.ledger.sweepAbandoned(this.abandonAfterMs);
    const { rows } = await this.db.query<TaskForSettlement & { upstream_task_id: string; poll_attempts: number }>(
      `UPDATE task t SET next_poll_at = clock_timestamp() + interval '${LEASE_SECONDS} seconds', poll_attempts = t.poll_attempts + 1
       WHERE t.id IN (SELECT id FROM task WHERE status = 'processing' AND next_poll_at <= clock_timestamp()
                      ORDER BY next_poll_at LIMIT ${BATCH} FOR UPDATE SKIP LOCKED)
       RETURNING ${TASK_FOR_SETTLEMENT_COLUMNS}, t.upstream_task_id::text AS upstream_task_id, t.poll_attempts`,
    );
    const results = await Promise.all(rows.map((task) => this.pollOne(task)));
    return results.filter(Boolean).length;
  }

  private async pollOne(task: TaskForSettlement & { upstream_task_id: string; poll_attempts: number }): Promise<boolean> {
    let settled = false;
    try {
      const res = await this.upstream.client.get(`/api-platform/v1/tasks/${task.upstream_task_id}`);
      const state = res.status === 200 ? polledState(res.contentType, res.body.toString('utf8')) : undefined;
      if (state) settled = await this.settlement.apply(task, state);
    } catch (error) {
      this.logger.debug(`task ${task.upstream_task_id}: ${(error as Error).message}`);
    }
    if (!settled) {
      const backoff = Math.min(MAX_BACKOFF_MS, this.config.POLL_INTERVAL_MS * 2 ** Math.min(task.poll_attempts, 10));
      await this.db.query(
        `UPDATE task SET next_poll_at = clock_timestamp() + make_interval(secs => $2::double precision / 1000)
         WHERE id = $1 AND status = 'processing'`,
        [task.id, backoff],
      );
    }
    return settled;
  }
}
