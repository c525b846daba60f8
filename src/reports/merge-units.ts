import { cappedInt } from '../common/counts.js';
import { dec, ZERO } from '../pricing/money.js';
import type { SpendRow, UnitEnum } from '../graphql/graphql.types.js';
import type { SpendRow as ReportRow } from './spend-report.js';

/**
 * One GraphQL row per group: the SQL's per-unit rows become `totals`, one Money per unit. The
 * report is sorted by keys then unit, so a group's rows are adjacent. Most groups have a single
 * unit: their figures pass through as the exact strings they are, with no intermediate arrays
 * (a 9,000-group report is answered many times a minute by dashboards). Counts are answered capped
 * and exact (common/counts.ts).
 */
export function mergeUnits(rows: ReportRow[]): SpendRow[] {
  const out: SpendRow[] = [];
  for (let at = 0; at < rows.length;) {
    let end = at + 1;
    while (end < rows.length && sameKeys(rows[at]!.keys, rows[end]!.keys)) end++;
    out.push(end === at + 1 ? oneUnit(rows[at]!) : severalUnits(rows.slice(at, end)));
    at = end;
  }
  return out;
}

function oneUnit(r: ReportRow): SpendRow {
  return {
    keys: r.keys,
    totals: [{ unit: r.unit as UnitEnum, amount: r.amount }],
    tasks: cappedInt(r.tasks),
    tasksExact: String(r.tasks),
    unpricedTasks: cappedInt(r.unpricedTasks),
    unpricedTasksExact: String(r.unpricedTasks),
    tokens: {
      input: r.inputTokens,
      output: r.outputTokens,
      cacheRead: r.cacheReadTokens,
      cacheWrite5m: r.cacheWrite5mTokens,
      cacheWrite1h: r.cacheWrite1hTokens,
      cacheWrite: r.cacheWriteTokens,
    },
    videoSeconds: r.videoSeconds,
    images: cappedInt(r.images),
    imagesExact: String(r.images),
    apiKeyName: r.apiKeyName ?? null,
  };
}

/** A group with rows in both units: money stays per unit in `totals`; quantities (tokens, seconds) are added up. */
function severalUnits(parts: ReportRow[]): SpendRow {
  const total = (pick: (r: ReportRow) => string) => parts.reduce((s, p) => s.plus(dec(pick(p))), ZERO).toFixed();
  const count = (pick: (r: ReportRow) => number) => parts.reduce((n, p) => n + pick(p), 0);
  const [tasks, unpriced, images] = [count((r) => r.tasks), count((r) => r.unpricedTasks), count((r) => r.images)];
  return {
    keys: parts[0]!.keys,
    totals: parts.map((p) => ({ unit: p.unit as UnitEnum, amount: p.amount })),
    tasks: cappedInt(tasks),
    tasksExact: String(tasks),
    unpricedTasks: cappedInt(unpriced),
    unpricedTasksExact: String(unpriced),
    tokens: {
      input: total((r) => r.inputTokens),
      output: total((r) => r.outputTokens),
      cacheRead: total((r) => r.cacheReadTokens),
      cacheWrite5m: total((r) => r.cacheWrite5mTokens),
      cacheWrite1h: total((r) => r.cacheWrite1hTokens),
      cacheWrite: total((r) => r.cacheWriteTokens),
    },
    videoSeconds: total((r) => r.videoSeconds),
    images: cappedInt(images),
    imagesExact: String(images),
    apiKeyName: parts[0]!.apiKeyName ?? null,
  };
}

function sameKeys(a: string[], b: string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
