/**
 * Prometheus metrics of this instance (prom-client), served at GET /metrics. Money (spend, budgets)
 * is not counted here but read from the books at GET /metrics/books (book-metrics/, decisions §21).
 */
import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Charge } from '../pricing/pricing.types.js';

/** Latency buckets (seconds) of both duration histograms; bench:gateway reads the 2.5, 5, 10 and 25 ms ones. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];

@Injectable()
export class MetricsService {
  readonly registry = new Registry();
  readonly requests = new Histogram({
    name: 'spendgate_http_request_duration_seconds',
    help: 'HTTP requests by route and status',
    labelNames: ['method', 'route', 'status'],
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  /**
   * Where a submission's time goes inside the gateway: the hold (waiting for and running its
   * batch; every outcome), the upstream call (every answer that is not an event stream), and
   * recording an accepted task (waiting for and running its batch).
   */
  readonly submissionStages = new Histogram({
    name: 'spendgate_submission_stage_seconds',
    help: 'Submission time by stage: hold, upstream, record',
    labelNames: ['stage'],
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly holds = new Counter({
    name: 'spendgate_holds_total',
    help: 'Hold attempts by outcome',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  readonly settlements = new Counter({
    name: 'spendgate_settlements_total',
    help: 'Settlements by status',
    labelNames: ['status'],
    registers: [this.registry],
  });
  readonly upstreamErrors = new Counter({
    name: 'spendgate_upstream_errors_total',
    help: 'Upstream failures by kind',
    labelNames: ['kind'],
    registers: [this.registry],
  });
  /** Charges above their hold (decisions §6): how many, and by how much in all (display only). */
  readonly overruns = new Counter({
    name: 'spendgate_overruns_total',
    help: 'Settlements whose charge passed the hold, by unit',
    labelNames: ['unit'],
    registers: [this.registry],
  });
  readonly overrunAmount = new Counter({
    name: 'spendgate_overrun_amount_total',
    help: 'Charge above the hold, summed by unit (display only; the ledger is exact)',
    labelNames: ['unit'],
    registers: [this.registry],
  });
  // Alerts (decisions §8): this instance's delivery attempts, and the outbox lag it last measured.
  readonly webhookDeliveries = new Counter({
    name: 'spendgate_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome (delivered, retried, failed)',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  readonly webhookLatency = new Histogram({
    name: 'spendgate_webhook_attempt_seconds',
    help: 'Webhook attempts, request to answer (or timeout)',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly webhookLag = new Gauge({
    name: 'spendgate_webhook_outbox_lag_seconds',
    help: 'How long the oldest due webhook delivery has waited (0: none due)',
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  settled(status: string, charge: Charge, overrun: string | null = null): void {
    this.settlements.inc({ status });
    if (overrun !== null) {
      this.overruns.inc({ unit: charge.unit });
      this.overrunAmount.inc({ unit: charge.unit }, Number(overrun));
    }
  }
}
