/**
 * Background poller: advances tasks no client polls. Safe with several gateway instances on one
 * database: a task is claimed with a lease (TaskStore.claimDue), so two instances never poll the
 * same task at once, and settlement is exactly-once anyway.
 * Each round also sweeps tasks abandoned in `submitting` by a gateway that died.
 */
import { Inject, Injectable, Logger } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config.js';
import { UpstreamService } from '../upstream/upstream.service.js';
import { polledState } from '../upstream/event-stream.js';
import { VENDOR_PATHS } from '../upstream/vendor-protocol.js';
import { SettlementService } from './settlement.service.js';
import { TaskStore, type DueTask } from './task-store.js';
import { Repeating } from '../common/repeating.js';

const BATCH = 50;
const MAX_BACKOFF_MS = 60_000;

@Injectable()
export class PollerService {
  private readonly logger = new Logger('Poller');
  private readonly loop: Repeating;

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
    await this.loop.stop();
  }

  /** One round: sweep, claim due tasks, poll them, settle terminal ones. Returns how many settled. */
  async round(): Promise<number> {
    await this.tasks.sweepAbandoned(this.abandonAfterMs);
    const due = await this.tasks.claimDue(BATCH);
    const results = await Promise.all(due.map((task) => this.pollOne(task)));
    return results.filter(Boolean).length;
  }

  private async pollOne(task: DueTask): Promise<boolean> {
    let settled = false;
    try {
      const res = await this.upstream.client.get(VENDOR_PATHS.task(task.upstream_task_id));
      const state = res.status === 200 ? polledState(res.contentType, res.body.toString('utf8')) : undefined;
      if (state) settled = await this.settlement.apply(task, state);
    } catch (error) {
      this.logger.debug(`task ${task.upstream_task_id}: ${(error as Error).message}`);
    }
    if (!settled) {
      const backoff = Math.min(MAX_BACKOFF_MS, this.config.POLL_INTERVAL_MS * 2 ** Math.min(task.poll_attempts, 10));
      await this.tasks.pollAgainIn(task.id, backoff);
    }
    return settled;
  }
}
