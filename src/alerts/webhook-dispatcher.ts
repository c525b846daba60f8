/**
 * Sends the outbox's deliveries (decisions §8). Every gateway instance runs one, on its own small
 * pool (`spendgate-webhooks`), so it never takes a connection the submission path needs, with at
 * most WEBHOOK_CONCURRENCY requests in flight, each cut off after WEBHOOK_TIMEOUT_MS: a slow or
 * hanging receiver costs a slot, never a submission's time.
 *
 * A delivery is claimed with FOR UPDATE SKIP LOCKED, and the claim is a lease: its
 * next_attempt_at moves past the request's timeout, so two instances never send it at once, and
 * one killed mid-request leaves it due again when the lease ends (a receiver may then see it
 * twice, always with the same webhook-id). A 2xx delivers it; anything else is tried again with
 * exponential back-off and jitter until WEBHOOK_RETRY_FOR_MS after the event, then it is FAILED.
 * Every attempt is logged in webhook_attempt.
 */
import { Logger } from '@nestjs/common';
import { Webhook } from 'standardwebhooks';
import { Agent, request } from 'undici';
import { Repeating } from '../common/repeating.js';
import type { Config } from '../config/config.js';
import type { Database } from '../database/database.js';
import type { MetricsService } from '../metrics/metrics.service.js';
import { deliveryBody, retryDelayMs, type WebhookFormat } from './webhook-message.js';
import { checkTargetUrl, guardedAgent, TargetRefused, targetsGuarded } from './webhook-target.js';
import { EmailSender } from './email-delivery.js';

interface Claimed {
  id: string;
  attempts: number;
  event_id: string;
  payload: string;
  event_at: Date;
  url: string;
  format: WebhookFormat;
  secret: string;
  live: boolean;
}

type Settings = Pick<
  Config,
  | 'WEBHOOK_TIMEOUT_MS'
  | 'WEBHOOK_CONCURRENCY'
  | 'WEBHOOK_POLL_MS'
  | 'WEBHOOK_RETRY_BASE_MS'
  | 'WEBHOOK_RETRY_FOR_MS'
  | 'WEBHOOK_ALLOW_PRIVATE_TARGETS'
  | 'sandbox'
  | 'SMTP_URL'
  | 'ALERT_EMAIL_FROM'
>;

export class WebhookDispatcher {
  private readonly logger = new Logger('Webhooks');
  private readonly loop: Repeating;
  private stopped = false;
  private readonly inFlight = new Set<Promise<void>>();
  private claiming = false;
  private backlog = false;
  /** Guarded deliveries connect only to the public addresses their names resolve to (webhook-target.ts). */
  private readonly agent?: Agent;
  /** EMAIL endpoints' deliveries (email-delivery.ts). */
  private readonly email: EmailSender;

  constructor(
    private readonly db: Database,
    private readonly settings: Settings,
    private readonly metrics: MetricsService,
  ) {
    if (targetsGuarded(settings)) this.agent = guardedAgent();
    this.email = new EmailSender(settings.SMTP_URL, settings.ALERT_EMAIL_FROM, settings.WEBHOOK_TIMEOUT_MS);
    // The lag is measured once per poll, not on every claim a finished delivery makes in a backlog.
    this.loop = new Repeating(
      async () => {
        await this.measureLag();
        await this.round();
      },
      settings.WEBHOOK_POLL_MS,
      this.logger,
      'webhook round',
    );
  }

  start(): void {
    this.loop.start();
  }

  /** Stops claiming; waits for requests in flight (each ends within its timeout). */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop.stop();
    await Promise.all(this.inFlight);
    await this.agent?.close();
    this.email.close();
  }

  /**
   * Claims what is due, up to the free slots, and starts sending it; returns how many it claimed.
   * One round at a time per instance. While a round fills every free slot there is a backlog: each
   * finished delivery then claims the next at once instead of waiting for the poll interval.
   */
  async round(): Promise<number> {
    if (this.claiming) return 0;
    this.claiming = true;
    try {
      const free = this.settings.WEBHOOK_CONCURRENCY - this.inFlight.size;
      if (free <= 0) return 0;
      const claimed = await this.claim(free);
      this.backlog = claimed.length === free;
      for (const delivery of claimed) {
        const sending: Promise<void> = this.send(delivery)
          .catch((error) => this.logger.warn(`delivery ${delivery.id}: ${(error as Error).message}`))
          .finally(() => {
            this.inFlight.delete(sending);
            if (this.backlog && !this.stopped)
              void this.round().catch((error) => this.logger.warn(`webhook round failed: ${(error as Error).message}`));
          });
        this.inFlight.add(sending);
      }
      return claimed.length;
    } finally {
      this.claiming = false;
    }
  }

  private async claim(limit: number): Promise<Claimed[]> {
    const leaseMs = 2 * this.settings.WEBHOOK_TIMEOUT_MS + 1_000; // past any attempt: it ends within its timeout
    const { rows } = await this.db.query<Claimed>(
      `WITH due AS (
         SELECT id FROM webhook_delivery WHERE status = 'PENDING' AND next_attempt_at <= now()
         ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED
       ), claimed AS (
         UPDATE webhook_delivery d SET attempts = d.attempts + 1, next_attempt_at = now() + make_interval(secs => $2::double precision / 1000)
         FROM due WHERE d.id = due.id RETURNING d.id, d.attempts, d.event_id, d.endpoint_id
       )
       SELECT c.id::text, c.attempts, c.event_id, e.payload, e.created_at AS event_at, w.url, w.format::text AS format, w.secret,
              (w.enabled AND w.deleted_at IS NULL) AS live
       FROM claimed c JOIN outbox_event e ON e.id = c.event_id JOIN webhook_endpoint w ON w.id = c.endpoint_id`,
      [limit, leaseMs],
    );
    return rows;
  }

  private async send(d: Claimed): Promise<void> {
    if (!d.live) {
      await this.finish(d, {
        delivered: false,
        final: true,
        statusCode: null,
        latencyMs: 0,
        error: 'the endpoint was disabled or deleted',
      });
      return;
    }
    if (d.format === 'EMAIL') {
      const started = performance.now();
      const sent = await this.email.send(d.url, d.event_id, d.payload);
      const delivered = sent.error === null;
      const final = delivered || Date.now() - d.event_at.getTime() >= this.settings.WEBHOOK_RETRY_FOR_MS;
      await this.finish(d, {
        delivered,
        final,
        statusCode: sent.statusCode,
        latencyMs: sent.statusCode === null ? 0 : Math.round(performance.now() - started),
        error: sent.error,
      });
      return;
    }
    const body = deliveryBody(d.format, d.payload);
    const at = new Date();
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'spendgate-webhooks',
      'webhook-id': d.event_id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(d.secret).sign(d.event_id, at, body),
    };
    const started = performance.now();
    let statusCode: number | null = null;
    let error: string | null = null;
    try {
      if (this.agent) checkTargetUrl(d.url, true); // a literal address is connected to without a look-up
      const timeout = this.settings.WEBHOOK_TIMEOUT_MS;
      const res = await request(d.url, {
        method: 'POST',
        headers,
        body,
        headersTimeout: timeout,
        bodyTimeout: timeout,
        signal: AbortSignal.timeout(timeout),
        ...(this.agent ? { dispatcher: this.agent } : {}),
      });
      statusCode = res.statusCode;
      await res.body.dump({ limit: 64 * 1024 }); // the receiver's answer is not read, only drained
      if (statusCode < 200 || statusCode > 299) error = `HTTP ${statusCode}`;
    } catch (e) {
      error = describe(e as Error);
    }
    // How long a failed connection took would tell open ports from closed ones: only answers are timed.
    const latencyMs = statusCode === null ? 0 : Math.round(performance.now() - started);
    const delivered = error === null;
    const final = delivered || Date.now() - d.event_at.getTime() >= this.settings.WEBHOOK_RETRY_FOR_MS;
    await this.finish(d, { delivered, final, statusCode, latencyMs, error });
  }

  private async finish(
    d: Claimed,
    r: { delivered: boolean; final: boolean; statusCode: number | null; latencyMs: number; error: string | null },
  ) {
    const status = r.delivered ? 'DELIVERED' : r.final ? 'FAILED' : 'PENDING';
    const retryMs = r.final ? 0 : retryDelayMs(d.attempts, this.settings.WEBHOOK_RETRY_BASE_MS);
    await this.db.query(
      `WITH attempt AS (
         INSERT INTO webhook_attempt (delivery_id, attempt, status_code, latency_ms, error) VALUES ($1, $2, $3, $4, $5)
       )
       UPDATE webhook_delivery SET status = $6::"DeliveryStatus", last_status_code = $3, last_error = $5,
              delivered_at = CASE WHEN $6 = 'DELIVERED' THEN now() ELSE delivered_at END,
              next_attempt_at = now() + make_interval(secs => $7::double precision / 1000)
       WHERE id = $1`,
      [d.id, d.attempts, r.statusCode, r.latencyMs, r.error, status, retryMs],
    );
    this.metrics.webhookDeliveries.inc({ outcome: r.delivered ? 'delivered' : r.final ? 'failed' : 'retried' });
    this.metrics.webhookLatency.observe(r.latencyMs / 1000);
  }

  /** The outbox lag: how long the oldest due delivery has waited (0 when none is due). */
  private async measureLag(): Promise<void> {
    const { rows } = await this.db.query<{ lag: string | null }>(
      `SELECT extract(epoch FROM now() - min(next_attempt_at))::text AS lag FROM webhook_delivery WHERE status = 'PENDING' AND next_attempt_at <= now()`,
    );
    this.metrics.webhookLag.set(Math.max(0, Number(rows[0]?.lag ?? 0)));
  }
}

/**
 * A short reason for the attempt log: never the receiver's body, never a stack, and never the
 * socket's own error (refused, reset, timed out, unreachable): told apart, they would make the
 * delivery log a port scanner. A target refused by the rules says so.
 */
function describe(error: Error): string {
  const refused =
    error instanceof TargetRefused ? error : error.cause instanceof TargetRefused ? error.cause : undefined;
  if (refused) return `refused: ${refused.message.replace(/^url: /, '')}`;
  return 'no HTTP answer';
}
