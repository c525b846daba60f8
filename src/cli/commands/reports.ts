/** `spendgate report` (spend from the roll-ups, CSV, JSON or FOCUS) and `spendgate reconcile`. */
import type { Unit } from '../../pricing/money.js';
import { parseArgs } from 'node:util';
import { calendarDate, notADate } from '../../common/dates.js';
import { loadConfig } from '../../config/config.js';
import { reconcile } from '../../ledger/reconcile.js';
import { dec } from '../../pricing/money.js';
import { focusCsv } from '../../reports/focus-export.js';
import { toCsv } from '../../reports/spend-csv.js';
import { checkReportQuery, spendReport, type GroupKey, type ReportQuery } from '../../reports/spend-report.js';
import { UsageError, withDatabase, withReportsDatabase } from '../cli-support.js';

export async function reconcileCommand(): Promise<number> {
  const differences = await withDatabase((db) => reconcile(db));
  if (differences.length === 0) {
    process.stdout.write('reconcile: clean — every balance equals the sum of its ledger entries\n');
    return 0;
  }
  for (const d of differences)
    process.stdout.write(`DIFFERENCE ${d.what}: stored ${d.stored}, ledger ${d.fromLedger}\n`);
  return 1;
}

export async function report(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      from: { type: 'string' },
      to: { type: 'string' },
      'group-by': { type: 'string' },
      format: { type: 'string' },
      unit: { type: 'string' },
      'order-by': { type: 'string' },
      first: { type: 'string' },
    },
  });
  if (!values.from || !values.to) throw new UsageError('report --from <date> --to <date>');
  const from = calendarDate(values.from);
  const to = calendarDate(values.to);
  if (!from) throw new UsageError(notADate('--from', values.from));
  if (!to) throw new UsageError(notADate('--to', values.to));
  if (values.format !== undefined && !['csv', 'json', 'focus'].includes(values.format))
    throw new UsageError(`--format: ${JSON.stringify(values.format)} is not one of csv, json, focus`);
  if (values.format === 'focus') {
    const config = loadConfig(process.env);
    const rate = config.CREDITS_PER_USD ? { creditsPerUsd: dec(config.CREDITS_PER_USD) } : {};
    process.stdout.write(
      await withReportsDatabase((db) => focusCsv(db, { from, to, vendorName: config.VENDOR_NAME, ...rate })),
    );
    return 0;
  }
  const groupBy = (values['group-by'] ?? 'project,model,day').split(',').filter(Boolean) as GroupKey[];
  const query: ReportQuery = {
    from,
    to,
    groupBy,
    ...(values.unit ? { unit: values.unit as Unit } : {}),
    ...(values['order-by'] ? { orderBy: values['order-by'] as 'keys' | 'amount' } : {}),
    ...(values.first ? { first: /^\d+$/.test(values.first) ? Number(values.first) : Number.NaN } : {}),
  };
  try {
    checkReportQuery(query);
  } catch (error) {
    throw new UsageError(
      (error as Error).message.replace(
        /^(groupBy|orderBy|first|unit):/,
        (_, f: string) => `--${f === 'groupBy' ? 'group-by' : f === 'orderBy' ? 'order-by' : f}:`,
      ),
    );
  }
  const rows = await withReportsDatabase((db) => spendReport(db, query));
  process.stdout.write(values.format === 'json' ? `${JSON.stringify(rows, null, 2)}\n` : toCsv(groupBy, rows));
  return 0;
}
