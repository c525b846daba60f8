/** The spend report as CSV (GET /reports/spend.csv, `spendgate report --format csv`). */
import { csvLine } from '../common/csv.js';
import type { GroupKey, SpendRow } from './spend-report.js';

export const CSV_COLUMNS = [
  'unit',
  'amount',
  'tasks',
  'unpriced_tasks',
  'input_tokens',
  'output_tokens',
  'cache_read_tokens',
  'cache_write_5m_tokens',
  'cache_write_1h_tokens',
  'cache_write_tokens',
  'video_seconds',
  'images',
] as const;

/**
 * CSV: one header row, stable columns, exact decimals as plain strings, unit in its own column.
 * Cells go through csvCell (quoting, and formula injection neutralised: a project may be named
 * "=HYPERLINK(…)").
 */
export function toCsv(groupBy: GroupKey[], rows: SpendRow[]): string {
  // Grouped by key, the key's name follows in a last column (added last: earlier columns keep their places).
  const named = groupBy.includes('apiKey');
  const lines = rows.map((r) =>
    csvLine([
      ...r.keys,
      r.unit,
      r.amount,
      r.tasks,
      r.unpricedTasks,
      r.inputTokens,
      r.outputTokens,
      r.cacheReadTokens,
      r.cacheWrite5mTokens,
      r.cacheWrite1hTokens,
      r.cacheWriteTokens,
      r.videoSeconds,
      r.images,
      ...(named ? [r.apiKeyName ?? ''] : []),
    ]),
  );
  return [csvLine([...groupBy, ...CSV_COLUMNS, ...(named ? ['api_key_name'] : [])]), ...lines].join('\n') + '\n';
}
