/**
 * The books as Prometheus metrics (decisions §21), read from the database at each scrape, so every
 * instance answers the same figures and they agree with spendReport and budgetStatus by
 * construction (they read the same rows):
 *
 * - `spendgate_spend_total{project,model,unit,status}`: every amount the roll-ups ever received,
 *   credits included as the amount they took away, i.e. Σ (amount + credit) of spend_rollup;
 *   `spendgate_credit_total{…}`: the credits alone. Both only grow (a Prometheus counter may not
 *   fall); the net spend of a window is increase(spend) − increase(credit).
 * - `spendgate_budget_limit|used|held|forecast{project,budget,unit,period}` for each live budget of
 *   a labelled project (used = settled spend of the current period; EACH_USER: the user nearest
 *   its limit; forecast when there is one).
 * - `spendgate_review_open{project}`, `spendgate_vendor_differences_open{unit}` and their amount.
 *
 * Cardinality is bounded: the METRICS_MAX_PROJECTS oldest projects have a label of their own and
 * the rest share "(other)" (by age, so a project never moves between the two and no counter
 * falls); models come from the catalog; no user or task is ever a label. A series seen for the
 * first time shows 0 for METRICS_NEW_SERIES_MS (from the roll-up row's first_at, the same on every
 * instance), so that increase() over a window counts its first amount too.
 *
 * Scrape it as one target (any instance, or the load balancer): summed over instances it would
 * count the books once per instance. Concurrent scrapes share one computation.
 */
import { Inject, Injectable } from '@nestjs/common';
import { Counter, Gauge, Registry } from 'prom-client';
import { BudgetStatusService } from '../budgets/budget-status.service.js';
import { CONFIG, type Config } from '../config/config.js';
import { Database, READS_DATABASE } from '../database/database.js';
import { forecastOfStatus } from '../forecast/forecast-data.js';
import { dec, ZERO, type Decimal } from '../pricing/money.js';

export const OTHER_PROJECTS = '(other)';

interface SpendRow {
  project_id: string;
  model: string;
  unit: string;
  status: string;
  charged: string;
  credited: string;
  born: Date;
}

@Injectable()
export class BookMetricsService {
  private running: Promise<string> | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    @Inject(READS_DATABASE) private readonly db: Database,
    private readonly budgets: BudgetStatusService,
  ) {}

  readonly contentType = new Registry().contentType;

  /** The exposition text, computed once for however many scrapes arrive meanwhile. */
  text(): Promise<string> {
    this.running ??= this.compute().finally(() => (this.running = null));
    return this.running;
  }

  private async compute(): Promise<string> {
    const registry = new Registry();
    const now = new Date();
    const labelled = await this.projectLabels();
    await this.spend(registry, labelled, now);
    await this.budgetGauges(registry, labelled);
    await this.queues(registry, labelled);
    return registry.metrics();
  }

  /** Every project's label: its name for the oldest METRICS_MAX_PROJECTS, "(other)" after them. */
  private async projectLabels(): Promise<Map<string, { name: string; own: boolean }>> {
    const { rows } = await this.db.query<{ id: string; name: string; own: boolean }>(
      `SELECT id::text, name, row_number() OVER (ORDER BY created_at, id) <= $1 AS own FROM project`,
      [this.config.METRICS_MAX_PROJECTS],
    );
    return new Map(rows.map((r) => [r.id, { name: r.own ? r.name : OTHER_PROJECTS, own: r.own }]));
  }

  private async spend(registry: Registry, labelled: Map<string, { name: string }>, now: Date): Promise<void> {
    const { rows } = await this.db.query<SpendRow>(
      `SELECT r.project_id::text, r.model, r.unit::text, r.status, sum(r.amount + r.credit)::text AS charged,
              sum(r.credit)::text AS credited, min(r.first_at) AS born
       FROM spend_rollup r GROUP BY r.project_id, r.model, r.unit, r.status`,
    );
    const series = new Map<
      string,
      { labels: Record<string, string>; charged: Decimal; credited: Decimal; born: number }
    >();
    for (const r of rows) {
      const labels = {
        project: labelled.get(r.project_id)?.name ?? OTHER_PROJECTS,
        model: r.model,
        unit: r.unit,
        status: r.status,
      };
      const key = JSON.stringify(labels);
      const s = series.get(key) ?? { labels, charged: ZERO, credited: ZERO, born: Infinity };
      series.set(key, {
        labels,
        charged: s.charged.plus(dec(r.charged)),
        credited: s.credited.plus(dec(r.credited)),
        born: Math.min(s.born, r.born.getTime()),
      });
    }
    const labelNames = ['project', 'model', 'unit', 'status'];
    const spend = new Counter({
      name: 'spendgate_spend_total',
      help: 'Every amount settled or adjusted, credits counted as what they took away (net = spend - credit); from the books',
      labelNames,
      registers: [registry],
    });
    const credit = new Counter({
      name: 'spendgate_credit_total',
      help: 'Credits (negative adjustments) as positive amounts; from the books',
      labelNames,
      registers: [registry],
    });
    for (const s of series.values()) {
      const shown = now.getTime() - s.born >= this.config.METRICS_NEW_SERIES_MS;
      spend.inc(s.labels, shown ? Number(s.charged.toFixed()) : 0);
      credit.inc(s.labels, shown ? Number(s.credited.toFixed()) : 0);
    }
  }

  private async budgetGauges(registry: Registry, labelled: Map<string, { name: string; own: boolean }>): Promise<void> {
    const labelNames = ['project', 'budget', 'unit', 'period'];
    const gauge = (name: string, help: string) => new Gauge({ name, help, labelNames, registers: [registry] });
    const limit = gauge('spendgate_budget_limit', "A budget's limit");
    const used = gauge(
      'spendgate_budget_used',
      "Settled spend of the budget's current period (EACH_USER: the user nearest the limit)",
    );
    const held = gauge('spendgate_budget_held', 'Held for tasks in flight in the current period');
    const forecast = gauge(
      'spendgate_budget_forecast',
      "Spend expected at the period's end (absent: too little history)",
    );
    for (const [projectId, project] of labelled) {
      if (!project.own) continue;
      for (const b of await this.budgets.status(projectId)) {
        const labels = { project: project.name, budget: b.budgetId, unit: b.unit, period: b.period };
        limit.set(labels, Number(b.limit.toFixed()));
        used.set(labels, Number(b.spent.toFixed()));
        held.set(labels, Number(b.held.toFixed()));
        const f = await forecastOfStatus(this.db, b);
        if (f?.forecastSpend) forecast.set(labels, Number(f.forecastSpend.toFixed(6)));
      }
    }
  }

  private async queues(registry: Registry, labelled: Map<string, { name: string }>): Promise<void> {
    const review = new Gauge({
      name: 'spendgate_review_open',
      help: 'Tasks in the review queue (outcome or charge to be decided by a person)',
      labelNames: ['project'],
      registers: [registry],
    });
    const reviews = await this.db.query<{ project_id: string; n: number }>(
      `SELECT project_id::text, count(*)::int AS n FROM task WHERE needs_review GROUP BY project_id`,
    );
    for (const r of reviews.rows) review.inc({ project: labelled.get(r.project_id)?.name ?? OTHER_PROJECTS }, r.n);
    const differences = new Gauge({
      name: 'spendgate_vendor_differences_open',
      help: "Open differences between the vendor's statements and the ledger",
      labelNames: ['unit'],
      registers: [registry],
    });
    const amount = new Gauge({
      name: 'spendgate_vendor_difference_open_amount',
      help: 'Their amount, theirs minus ours (positive: the vendor billed more)',
      labelNames: ['unit'],
      registers: [registry],
    });
    const open = await this.db.query<{ unit: string; n: number; amount: string }>(
      `SELECT unit::text, count(*)::int AS n, coalesce(sum(difference), 0)::text AS amount FROM vendor_recon_item WHERE state = 'open' GROUP BY unit`,
    );
    for (const r of open.rows) {
      differences.set({ unit: r.unit }, r.n);
      amount.set({ unit: r.unit }, Number(r.amount));
    }
  }
}
