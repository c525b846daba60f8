/**
 * A spend report's rows after the read (spend-report.ts), plain TypeScript: the `(none)` group of a
 * tag report (total minus what the tag's values hold), rows in key order with projects named, and
 * the first `first` groups.
 */
import { dec } from '../pricing/money.js';
import { sortedOrder } from './report-order.js';
import { NONE, type GroupKey, type SpendRow } from './report-query.js';

/** `(none)` rows of a tag report: for each group of the other keys and unit, total − Σ tagged. */
export function untagged(tagged: SpendRow[], totals: SpendRow[], at: number): SpendRow[] {
  const groupOf = (keys: string[], unit: string) => JSON.stringify([...keys, unit]);
  const sums = new Map<string, SpendRow[]>();
  for (const row of tagged) {
    const g = groupOf(
      row.keys.filter((_, i) => i !== at),
      row.unit,
    );
    sums.set(g, [...(sums.get(g) ?? []), row]);
  }
  const rows: SpendRow[] = [];
  for (const total of totals) {
    const parts = sums.get(groupOf(total.keys, total.unit)) ?? [];
    const minus = (pick: (r: SpendRow) => string) =>
      parts.reduce((s, p) => s.minus(dec(pick(p))), dec(pick(total))).toFixed();
    const less = (pick: (r: SpendRow) => number) => parts.reduce((s, p) => s - pick(p), pick(total));
    const row: SpendRow = {
      keys: [...total.keys.slice(0, at), NONE, ...total.keys.slice(at)],
      unit: total.unit,
      amount: minus((r) => r.amount),
      tasks: less((r) => r.tasks),
      unpricedTasks: less((r) => r.unpricedTasks),
      inputTokens: minus((r) => r.inputTokens),
      outputTokens: minus((r) => r.outputTokens),
      cacheReadTokens: minus((r) => r.cacheReadTokens),
      cacheWrite5mTokens: minus((r) => r.cacheWrite5mTokens),
      cacheWrite1hTokens: minus((r) => r.cacheWrite1hTokens),
      cacheWriteTokens: minus((r) => r.cacheWriteTokens),
      videoSeconds: minus((r) => r.videoSeconds),
      images: less((r) => r.images),
    };
    if (row.tasks !== 0 || !dec(row.amount).isZero()) rows.push(row);
  }
  return rows;
}

/**
 * Rows sorted by their keys in groupBy order, then unit: a project by its rank among names in
 * byte order (one missing from the names, if one ever were, sorts last by id), the other keys as
 * their text (ISO dates and weeks sort by time). Project keys are named here.
 */
export function ordered(
  groupBy: GroupKey[],
  rows: SpendRow[],
  projects: Map<string, { name: string; sortKey: string }> | null,
): SpendRow[] {
  const at = groupBy.indexOf('project');
  const sortColumns: string[][] = [...groupBy.map(() => [] as string[]), []];
  for (const row of rows) {
    const keys = row.keys;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      if (i === at) {
        const project = projects?.get(key);
        keys[i] = project?.name ?? key;
        sortColumns[i]!.push(project?.sortKey ?? `~${key}`);
      } else sortColumns[i]!.push(key);
    }
    sortColumns[groupBy.length]!.push(row.unit);
  }
  return sortedOrder(sortColumns, rows.length).map((i) => rows[i]!);
}

/** The first `first` groups of rows sorted by keys (a group has one row per unit). */
export function firstGroups(rows: SpendRow[], first: number | undefined): SpendRow[] {
  if (first === undefined) return rows;
  let groups = 0;
  let last = '';
  const out: SpendRow[] = [];
  for (const row of rows) {
    const key = JSON.stringify(row.keys);
    if (key !== last) {
      if (++groups > first) break;
      last = key;
    }
    out.push(row);
  }
  return out;
}
