/**
 * The books as Prometheus metrics agree with the model (decisions §21): `/metrics/books` scraped
 * from either instance. Per project and unit, Σ spend − Σ credit over every model and status is
 * everything the project was ever charged or adjusted; each budget's used and held are its spent
 * and held (an EACH_USER budget shows its user nearest the limit: not compared here, budgetStatus
 * is); the review queue counts the tasks awaiting a person. Metrics are floats (Prometheus has no
 * other number), so amounts agree to 1e-12 of their size, not exactly; the exact figures are
 * budgetStatus's and spendReport's, compared in invariants.ts.
 */
import { Decimal } from 'decimal.js';
import type { Env } from './commands.js';
import { call, type Real } from './real.js';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (no escapes needed: our labels are names and ids). */
function samples(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...m[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1]!, l[2]!]));
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

export async function metricsProblems(env: Env, real: Real, at: number): Promise<string[]> {
  const m = env.model;
  const problems: string[] = [];
  const res = await call(real, at, 'GET', '/metrics/books');
  if (res.status !== 200) return [`/metrics/books on gw${at}: ${res.status} ${res.text.slice(0, 200)}`];
  const all = samples(res.text);
  const near = (what: string, shown: number, expected: Decimal) => {
    if (Math.abs(shown - expected.toNumber()) > 1e-12 * Math.max(1, Math.abs(expected.toNumber())))
      problems.push(`${what}: /metrics/books on gw${at} says ${shown}, the model ${expected.toFixed()}`);
  };
  const sum = (name: string, match: (l: Record<string, string>) => boolean) =>
    all.filter((s) => s.name === name && match(s.labels)).reduce((t, s) => t + s.value, 0);

  const projects = [...real.sys.projects, { id: real.sys.past.id, name: 'past' }];
  for (const project of projects) {
    for (const unit of ['USD', 'CREDITS'] as const) {
      const mine = (l: Record<string, string>) => l.project === project.name && l.unit === unit;
      const expected = m.postings
        .filter((p) => p.project === project.id && p.unit === unit)
        .reduce((t, p) => t.plus(p.amount), new Decimal(0));
      near(
        `spend − credit of ${project.name} ${unit}`,
        sum('spendgate_spend_total', mine) - sum('spendgate_credit_total', mine),
        expected,
      );
    }
    const waiting = m.tasks.filter(
      (t) => t.project === project.id && (m.underReview(t) || m.statements.namesOpenDifference(t)),
    ).length;
    const queue = sum('spendgate_review_open', (l) => l.project === project.name);
    if (queue !== waiting)
      problems.push(`review queue of ${project.name}: /metrics/books on gw${at} says ${queue}, the model ${waiting}`);
  }

  for (const b of m.budgets.values()) {
    if (b.scope === 'EACH_USER') continue;
    const { spent, held } = m.balance(b);
    const mine = (l: Record<string, string>) => l.budget === b.id;
    if (!all.some((s) => s.name === 'spendgate_budget_used' && mine(s.labels))) {
      problems.push(`budget ${b.id}: missing from /metrics/books on gw${at}`);
      continue;
    }
    near(`budget ${b.id} used`, sum('spendgate_budget_used', mine), spent);
    near(`budget ${b.id} held`, sum('spendgate_budget_held', mine), held);
    near(`budget ${b.id} limit`, sum('spendgate_budget_limit', mine), b.limit);
  }
  return problems;
}
