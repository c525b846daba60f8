/**
 * A spend report with a converted figure beside each exact one, and a converted total (decisions
 * §19). The report is read once per span of constant versions (conversion.ts; usually one), so each
 * month's spend converts at that month's rates; the rows' exact amounts are the report's own.
 */
import { Injectable } from '@nestjs/common';
import { cappedInt } from '../common/counts.js';
import { dec, ZERO, type Decimal, type Unit } from '../pricing/money.js';
import { ReportsService } from '../reports/reports.service.js';
import type { ReportQuery } from '../reports/spend-report.js';
import { conversionLabel, convert, missingRates, spans, type Span } from '../rates/conversion.js';
import { RatesService } from '../rates/rates.service.js';

export interface ConvertedRow {
  keys: string[];
  unit: Unit;
  amount: string;
  /** Capped at GraphQL's Int; tasksExact in digits (common/counts.ts). */
  tasks: number;
  tasksExact: string;
  /** null: a rate it needs is missing (see `missing`). */
  converted: string | null;
}

export interface ConvertedTotal {
  currency: string;
  /** Every unit converted and summed; null when any rate is missing. */
  amount: string | null;
  label: string;
  missing: string[];
  creditPriceVersions: number[];
  fxRateVersions: number[];
}

export interface ConvertedSpend extends ConvertedTotal {
  rows: ConvertedRow[];
}

interface Sum {
  keys: string[];
  unit: Unit;
  amount: Decimal;
  tasks: number;
  converted: Decimal | null;
}

@Injectable()
export class ConvertedSpendService {
  constructor(
    private readonly reports: ReportsService,
    private readonly rates: RatesService,
  ) {}

  async report(q: Omit<ReportQuery, 'first' | 'orderBy'>, currency: string): Promise<ConvertedSpend> {
    const cut = await this.spans(q.from, q.to, currency);
    const sums = new Map<string, Sum>();
    const used: Span[] = [];
    const missing = new Set<string>();
    for (const span of cut) {
      const rows = await this.reports.spend({ ...q, from: span.from, to: span.to });
      if (rows.length === 0) continue;
      used.push(span);
      for (const m of missingRates(span, new Set(rows.map((r) => r.unit)), currency)) missing.add(m);
      for (const row of rows) {
        const key = JSON.stringify([row.keys, row.unit]);
        const sum = sums.get(key) ?? { keys: row.keys, unit: row.unit, amount: ZERO, tasks: 0, converted: ZERO };
        const amount = dec(row.amount);
        const converted = convert(amount, row.unit, span, currency);
        sum.amount = sum.amount.plus(amount);
        sum.tasks += row.tasks;
        sum.converted = sum.converted && converted ? sum.converted.plus(converted) : null;
        sums.set(key, sum);
      }
    }
    const rows = [...sums.values()];
    const complete = rows.every((r) => r.converted !== null);
    return {
      ...this.total(currency, complete ? rows.reduce((t, r) => t.plus(r.converted!), ZERO) : null, used, [...missing]),
      rows: rows.map((r) => ({
        keys: r.keys,
        unit: r.unit,
        amount: r.amount.toFixed(),
        tasks: cappedInt(r.tasks),
        tasksExact: String(r.tasks),
        converted: r.converted?.toFixed() ?? null,
      })),
    };
  }

  /** Per-unit totals of one month (a statement's) in `currency`, at that month's rates. */
  async month(
    month: string,
    totals: ReadonlyArray<{ unit: Unit; amount: string }>,
    currency: string,
  ): Promise<ConvertedTotal> {
    const from = new Date(`${month}-01T00:00:00Z`);
    const to = new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + 1, 1));
    const [span] = await this.spans(from, to, currency);
    const parts = totals.map((t) => convert(dec(t.amount), t.unit, span!, currency));
    const amount = parts.every((p) => p !== null) ? parts.reduce((s, p) => s.plus(p!), ZERO) : null;
    return this.total(currency, amount, [span!], missingRates(span!, new Set(totals.map((t) => t.unit)), currency));
  }

  private async spans(from: Date, to: Date, currency: string): Promise<Span[]> {
    const [credit, fx] = await Promise.all([
      this.rates.versions(null),
      currency === 'USD' ? Promise.resolve(null) : this.rates.versions(currency),
    ]);
    return spans(from, to, credit, fx);
  }

  private total(currency: string, amount: Decimal | null, used: Span[], missing: string[]): ConvertedTotal {
    const versions = (pick: (s: Span) => number | undefined) =>
      [...new Set(used.map(pick).filter((v): v is number => v !== undefined))].sort((a, b) => a - b);
    return {
      currency,
      amount: amount?.toFixed() ?? null,
      label: conversionLabel(currency, used),
      missing,
      creditPriceVersions: versions((s) => s.credit?.version),
      fxRateVersions: versions((s) => s.fx?.version),
    };
  }
}
