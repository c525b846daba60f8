/**
 * Finance and dashboard read models, all from the roll-up and the budget period rows. They read
 * REPORTS_DATABASE: a replica when one is configured (figures then lag the primary by its replay
 * delay), otherwise the primary.
 */
import type { Unit } from '../pricing/money.js';
import { Inject, Injectable } from '@nestjs/common';
import { cappedInt } from '../common/counts.js';
import { CONFIG, type Config } from '../config/config.js';
import { Database, REPORTS_DATABASE } from '../database/database.js';
import { focusCsv, type FocusOptions } from './focus-export.js';
import { dec, percent } from '../pricing/money.js';
import { spendReport, type ReportQuery, type SpendRow } from './spend-report.js';

export interface UnitAmount {
  unit: Unit;
  amount: string;
}

export interface Ranked {
  key: string;
  unit: Unit;
  amount: string;
  /** Capped at GraphQL's Int; tasksExact in digits (common/counts.ts). */
  tasks: number;
  tasksExact: string;
}

interface BudgetUse {
  budgetId: string;
  projectId: string;
  projectName: string;
  unit: Unit;
  period: string;
  limit: string;
  used: string;
}

export interface Dashboard {
  today: UnitAmount[];
  monthToDate: UnitAmount[];
  topModels: Ranked[];
  topProjects: Ranked[];
  budgetsAbove80: Array<BudgetUse & { percentUsed: string }>;
}

const TOP = 5;
const MAX_TAG_NAMES = 200;

@Injectable()
export class ReportsService {
  constructor(
    @Inject(REPORTS_DATABASE) private readonly db: Database,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /** FOCUS 1.2 rows as CSV, with this instance's credits-per-USD rate and vendor name. */
  focus(range: Pick<FocusOptions, 'from' | 'to' | 'projectIds'>): Promise<string> {
    return focusCsv(this.db, {
      ...range,
      vendorName: this.config.VENDOR_NAME,
      ...(this.config.CREDITS_PER_USD ? { creditsPerUsd: dec(this.config.CREDITS_PER_USD) } : {}),
    });
  }

  spend(query: ReportQuery): Promise<SpendRow[]> {
    return spendReport(this.db, query);
  }

  /**
   * A download's file name, after its range and project: spend-2026-10-01-to-2026-10-31-search.csv
   * (`to` is exclusive; the name says the last day). Only letters, digits, dot, dash and underscore.
   */
  async fileName(kind: string, from: Date, to: Date, projectIds: string[] | undefined): Promise<string> {
    const day = (d: Date) => (Number.isNaN(d.getTime()) ? 'unknown' : d.toISOString().slice(0, 10));
    const last = new Date(to.getTime() - (to.getTime() % 86_400_000 === 0 ? 86_400_000 : 0));
    let project = '';
    if (projectIds?.length === 1) {
      const { rows } = await this.db.query<{ name: string }>('SELECT name FROM project WHERE id = $1', [projectIds[0]]);
      project = rows[0] ? `-${rows[0].name.replace(/[^\w.-]+/g, '_').slice(0, 60)}` : '';
    }
    return `${kind}-${day(from)}-to-${day(last)}${project}.csv`;
  }

  /** The tag names tasks carried in [from, to) (from the tag roll-up), for grouping by tag:<name>. */
  async tagNames(from: Date, to: Date, projectIds: string[] | undefined): Promise<string[]> {
    const { rows } = await this.db.query<{ name: string }>(
      `SELECT DISTINCT split_part(s.value, '=', 1) AS name FROM spend_rollup_by s
       WHERE s.dimension = 'tag' AND s.period >= $1::date AND s.period < $2::date AND ($3::uuid[] IS NULL OR s.project_id = ANY($3))
       ORDER BY 1 LIMIT ${MAX_TAG_NAMES}`,
      [from.toISOString().slice(0, 10), to.toISOString().slice(0, 10), projectIds ?? null],
    );
    return rows.map((r) => r.name);
  }

  /** Today and month to date per unit, top models and projects this month per unit, budgets ≥ 80 %
   *  (from the roll-up summed over outcomes: every outcome counts here). */
  async dashboard(projectIds: string[] | null, now = new Date()): Promise<Dashboard> {
    const today = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
    const month = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
    const scope = 'AND ($2::uuid[] IS NULL OR s.project_id = ANY($2))';
    const totals = (since: Date) =>
      this.db
        .query<UnitAmount>(
          `SELECT s.unit, sum(s.amount)::text AS amount FROM spend_rollup_total s WHERE s.day >= $1::date ${scope} GROUP BY s.unit ORDER BY s.unit`,
          [since.toISOString().slice(0, 10), projectIds],
        )
        .then((r) => r.rows);
    const top = (key: string, join = '') =>
      this.db
        .query<Omit<Ranked, 'tasks'>>(
          // ORDER BY names r's columns: the output column amount is text, and "9.1" > "10.40" as text.
          `SELECT r.key, r.unit, r.amount::text AS amount, r.tasks::text AS "tasksExact" FROM (
             SELECT ${key} AS key, s.unit, sum(s.amount) AS amount, sum(s.tasks) AS tasks,
                    row_number() OVER (PARTITION BY s.unit ORDER BY sum(s.amount) DESC, ${key}) AS rank
             FROM spend_rollup_total s ${join} WHERE s.day >= $1::date ${scope} GROUP BY ${key}, s.unit) r
           WHERE r.rank <= ${TOP} ORDER BY r.unit, r.amount DESC, r.key`,
          [month.toISOString().slice(0, 10), projectIds],
        )
        .then((r) => r.rows.map((row): Ranked => ({ ...row, tasks: cappedInt(row.tasksExact) })));
    const [t, m, models, projects, budgets] = await Promise.all([
      totals(today),
      totals(month),
      top('s.model'),
      top('p.name', 'JOIN project p ON p.id = s.project_id'),
      this.db.query<BudgetUse>(
        `SELECT b.id AS "budgetId", b.project_id AS "projectId", p.name AS "projectName", b.unit, b.period::text AS period,
                b."limit"::text AS limit, (bp.spent + bp.held)::text AS used
         FROM budget b JOIN project p ON p.id = b.project_id
         JOIN budget_period bp ON bp.budget_id = b.id AND bp.period_start <= $1 AND bp.period_end > $1
         WHERE b.deleted_at IS NULL AND b."limit" > 0 AND (bp.spent + bp.held) >= b."limit" * 0.8
           AND ($2::uuid[] IS NULL OR b.project_id = ANY($2))
         ORDER BY (bp.spent + bp.held) / b."limit" DESC`,
        [now, projectIds],
      ),
    ]);
    return {
      today: t,
      monthToDate: m,
      topModels: models,
      topProjects: projects,
      budgetsAbove80: budgets.rows.map((b) => ({ ...b, percentUsed: percent(dec(b.used), dec(b.limit)) })),
    };
  }
}
