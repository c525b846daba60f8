/**
 * The months archived to Parquet (decisions §18), for the Months page: when, by whom, what went to
 * the files and what stayed. Their reports, statements and budgets still count them (roll-ups and
 * statements stay); their tasks are in the files until `spendgate archive restore` brings them back.
 */
import { dateTime, plural } from '../format';

export interface ArchivedMonth {
  month: string;
  archivedAt: string;
  archivedBy: string;
  tasks: number;
  ledgerEntries: number;
  keptTasks: number;
  directory: string;
}

export const ARCHIVED_FIELDS = 'archivedMonths { month archivedAt archivedBy tasks ledgerEntries keptTasks directory }';

export const restoreCommand = (month: string) => `spendgate archive restore ${month}`;

export function ArchivedMonths({ months }: { months: ArchivedMonth[] }) {
  if (months.length === 0) return null;
  return (
    <>
      <h2>Archived months</h2>
      <p class="hint">
        Their tasks, charge lines and ledger entries are in Parquet files under the gateway's ARCHIVE_DIR; reports,
        statements and budgets still count them. To see their tasks, or to reopen one, an operator restores it:{' '}
        <code>{restoreCommand('YYYY-MM')}</code>.
      </p>
      <table data-testid="archived-months">
        <thead>
          <tr>
            <th>Month (UTC)</th>
            <th>Archived</th>
            <th class="num">In its files</th>
            <th class="num">Kept in the database</th>
            <th>Directory</th>
          </tr>
        </thead>
        <tbody>
          {months.map((a) => (
            <tr data-archived={a.month}>
              <td>{a.month}</td>
              <td>
                {dateTime(a.archivedAt)} by {a.archivedBy}
              </td>
              <td class="num">
                {plural(a.tasks, 'task')}, {plural(a.ledgerEntries, 'ledger entry', 'ledger entries')}
              </td>
              <td class="num" title="open when archived, under review, or named by an open vendor difference">
                {plural(a.keptTasks, 'task')}
              </td>
              <td>
                <code>{a.directory}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
