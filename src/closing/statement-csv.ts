/**
 * A statement as CSV: one row per line of each section (section, item, detail, unit, amount,
 * tasks), amounts as the exact decimals the ledger holds, units in their own column. Cells go
 * through csvCell (quoting; formula injection neutralised).
 */
import { csvLine } from '../common/csv.js';
import type { StatementData } from './statement-data.js';

export const STATEMENT_CSV_HEADER = ['section', 'item', 'detail', 'unit', 'amount', 'tasks'] as const;

export function statementCsv(s: StatementData): string {
  const rows: Array<Array<string | number | null>> = [
    ['statement', 'project', `${s.project.name} (${s.project.id})`, null, null, null],
    ['statement', 'month', s.month, null, null, null],
    [
      'statement',
      'closed',
      `${s.closedAt} by ${s.closedBy}${s.version > 1 ? ` (version ${s.version}, after a reopening)` : ''}`,
      null,
      null,
      null,
    ],
    ['statement', 'ledger digest', `sha256 ${s.ledgerDigest} over ${s.entries} entries`, null, null, null],
    ...(s.ledgerHead !== undefined
      ? [
          [
            'statement',
            'ledger head at close',
            s.ledgerHead ? `seal ${s.ledgerHead.seq} ${s.ledgerHead.hash}` : 'no seal yet',
            null,
            null,
            null,
          ],
        ]
      : []),
    ...s.totals.map((t) => ['total', 'spend', null, t.unit, t.amount, t.tasks]),
    ...s.byModel.map((m) => ['model', m.model, m.kind, m.unit, m.amount, m.tasks]),
    ...s.byModel.flatMap((m) =>
      m.listAmount ? [['model at list prices', m.model, m.kind, m.unit, m.listAmount, m.tasks]] : [],
    ),
    ...s.byKey.map((k) => ['api key', k.key, k.name, k.unit, k.amount, k.tasks]),
    ...s.adjustments.map((a) => [
      'adjustment',
      `entry ${a.entryId}`,
      `${a.reason}${a.taskId ? ` (task ${a.taskId})` : ''}`,
      a.unit,
      a.amount,
      null,
    ]),
    ...s.priorPeriod.map((p) => [
      'prior-period item',
      p.taskId ? `task ${p.taskId}` : `entry ${p.entryId}`,
      `${p.kind} belonging to ${p.belongsTo}`,
      p.unit,
      p.amount,
      null,
    ]),
    ...s.openItems.map((o) => [
      'open at close',
      `task ${o.taskId}`,
      `${o.model}, accepted ${o.acceptedAt}; held, carried to the next month (not in the totals)`,
      o.unit,
      o.hold,
      null,
    ]),
  ];
  return [csvLine([...STATEMENT_CSV_HEADER]), ...rows.map(csvLine)].join('\n') + '\n';
}
