/**
 * Months: the last twelve UTC months, open or closed (final: their figures never change), with
 * Close for those who may close the books (finance, owners) once a month is over, Reopen for
 * owners on the latest closed month (with a reason; an archived one is restored first), each closed
 * month's statements to download (CSV and PDF, as kept at close), the prior-period items an open
 * month received, and the months archived to Parquet.
 */
import { useClient, useQuery } from '@urql/preact';
import type { CombinedError } from '@urql/core';
import { useState } from 'preact/hooks';
import { errorText, type Unit } from '../api';
import { may, useSigned } from '../signed';
import { dateTime, exactMoney, plural } from '../format';
import { ARCHIVED_FIELDS, ArchivedMonths, restoreCommand, type ArchivedMonth } from '../parts/archived-months';

interface Close {
  month: string;
  closedAt: string;
  closedBy: string;
  carriedTasks: number;
  statements: number;
  reopenedAt: string | null;
  reopenedBy: string | null;
  reopenReason: string | null;
  version: number;
  inForce: boolean;
}
interface StatementRow {
  projectId: string;
  projectName: string;
  version: number;
  totals: { unit: Unit; amount: string }[];
  csvPath: string;
  pdfPath: string;
}

const CLOSES = `query Closes { closedMonths { month closedAt closedBy carriedTasks statements reopenedAt reopenedBy reopenReason version inForce } monthToClose ${ARCHIVED_FIELDS} }`;
const STATEMENTS = `query Statements($month: String!) { statements(month: $month) { projectId projectName version totals { unit amount } csvPath pdfPath } }`;
const PRIOR = `query Prior($from: DateTime!, $to: DateTime!) { spendReport(from: $from, to: $to, groupBy: ["project"], statuses: ["prior_period"]) { keys totals { unit amount } tasksExact } }`;

/** The last twelve months, newest first, as YYYY-MM. */
function lastMonths(now = new Date()): string[] {
  return Array.from({ length: 12 }, (_, i) =>
    new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - i, 1)).toISOString().slice(0, 7),
  );
}
const bounds = (month: string) => {
  const start = new Date(`${month}-01T00:00:00Z`);
  return {
    from: start.toISOString(),
    to: new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1)).toISOString(),
  };
};

export function Months() {
  const { viewer } = useSigned();
  const client = useClient();
  const [{ data, error }, reload] = useQuery<{
    closedMonths: Close[];
    monthToClose: string | null;
    archivedMonths: ArchivedMonth[];
  }>({ query: CLOSES });
  const [failure, setFailure] = useState<CombinedError | undefined>();
  const [open, setOpen] = useState<string | null>(null);
  if (error)
    return (
      <p class="error" role="alert">
        {errorText(error)}
      </p>
    );
  if (!data) return <p class="loading">Loading…</p>;
  const inForce = new Map(data.closedMonths.filter((c) => c.inForce).map((c) => [c.month, c]));
  const latestClosed = [...inForce.keys()].sort().at(-1);
  const archived = new Map(data.archivedMonths.map((a) => [a.month, a]));
  const current = new Date().toISOString().slice(0, 7);
  const act = async (query: string, variables: Record<string, string>) => {
    const done = await client.mutation(query, variables).toPromise();
    setFailure(done.error);
    reload({ requestPolicy: 'network-only' });
  };
  return (
    <section data-ready="months">
      <h1>Months</h1>
      <p class="hint">
        A closed month is final: its reports, exports and statements never change. Anything that happens later to its
        tasks is posted in the first open month as a prior-period item.
      </p>
      {failure && (
        <p class="error" role="alert">
          {errorText(failure)}
        </p>
      )}
      <table data-testid="months">
        <thead>
          <tr>
            <th>Month (UTC)</th>
            <th>State</th>
            <th>Closed</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {lastMonths().map((month) => {
            const c = inForce.get(month);
            return (
              <>
                <tr data-month={month}>
                  <td>{month}</td>
                  <td>
                    {c ? (
                      <span class="badge">{archived.has(month) ? 'closed · final · archived' : 'closed · final'}</span>
                    ) : month === current ? (
                      'open (in progress)'
                    ) : (
                      'open'
                    )}
                  </td>
                  <td>
                    {c
                      ? `${dateTime(c.closedAt)} by ${c.closedBy}${c.version > 1 ? ` (close ${c.version}, after a reopening)` : ''}${c.carriedTasks ? `; ${plural(c.carriedTasks, 'open hold')} carried` : ''}${archived.has(month) ? `; archived ${dateTime(archived.get(month)!.archivedAt)}` : ''}`
                      : !c && month < current && month !== data.monthToClose && month > (data.monthToClose ?? '')
                        ? `closes after ${data.monthToClose ?? 'the months before it'} (months close in order)`
                        : '—'}
                  </td>
                  <td>
                    {c && (
                      <button type="button" class="link" onClick={() => setOpen(open === month ? null : month)}>
                        {open === month ? 'hide statements' : `statements (${c.statements})`}
                      </button>
                    )}{' '}
                    {!c && month === data.monthToClose && may(viewer, 'books') && (
                      <button
                        type="button"
                        onClick={() =>
                          confirm(`Close ${month}? Its figures become final.`) &&
                          void act('mutation($m: String!) { closeMonth(month: $m) { month } }', { m: month })
                        }
                      >
                        Close {month}
                      </button>
                    )}
                    {c && month === latestClosed && may(viewer, 'admin') && archived.has(month) && (
                      <small class="hint">
                        archived: to reopen it, restore it first (<code>{restoreCommand(month)}</code>)
                      </small>
                    )}
                    {c && month === latestClosed && may(viewer, 'admin') && !archived.has(month) && (
                      <button
                        type="button"
                        class="link"
                        onClick={() => {
                          const reason = prompt(`Why reopen ${month}? (kept in the audit trail)`);
                          if (reason?.trim())
                            void act('mutation($m: String!, $r: String!) { reopenMonth(month: $m, reason: $r) }', {
                              m: month,
                              r: reason.trim(),
                            });
                        }}
                      >
                        reopen
                      </button>
                    )}
                  </td>
                </tr>
                {open === month && (
                  <tr>
                    <td colSpan={4}>
                      <Statements month={month} />
                    </td>
                  </tr>
                )}
              </>
            );
          })}
        </tbody>
      </table>
      <PriorPeriod
        month={[...lastMonths()].reverse().find((m) => !inForce.has(m) && m > (latestClosed ?? '')) ?? current}
      />
      {data.closedMonths.some((c) => c.reopenedAt) && (
        <>
          <h2>Reopenings</h2>
          <ul>
            {data.closedMonths
              .filter((c) => c.reopenedAt)
              .map((c) => (
                <li>
                  {c.month}, close {c.version}: closed {dateTime(c.closedAt)}, reopened {dateTime(c.reopenedAt)} by{' '}
                  {c.reopenedBy}: {c.reopenReason}. Its {plural(c.statements, 'statement')} kept beside the later
                  close's.
                </li>
              ))}
          </ul>
        </>
      )}
      <ArchivedMonths months={data.archivedMonths} />
    </section>
  );
}

function Statements({ month }: { month: string }) {
  const [{ data, error }] = useQuery<{ statements: StatementRow[] }>({ query: STATEMENTS, variables: { month } });
  if (error) return <p class="error">{errorText(error)}</p>;
  if (!data) return <p class="loading">Loading…</p>;
  if (data.statements.length === 0) return <p class="none">No statement you may read for {month}.</p>;
  return (
    <table data-testid={`statements-${month}`}>
      <tbody>
        {data.statements.map((s) => (
          <tr>
            <td>{s.projectName}</td>
            <td class="num">{s.totals.map((t) => exactMoney(t.amount, t.unit)).join(' · ') || 'no spend'}</td>
            <td>
              <a href={s.csvPath} download>
                CSV
              </a>{' '}
              ·{' '}
              <a href={s.pdfPath} download>
                PDF
              </a>
              {s.version > 1 ? ` (version ${s.version})` : ''}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The prior-period items the first open month received: movements of closed months' tasks. */
function PriorPeriod({ month }: { month: string }) {
  const [{ data }] = useQuery<{
    spendReport: { keys: string[]; totals: { unit: Unit; amount: string }[]; tasksExact: string }[];
  }>({ query: PRIOR, variables: bounds(month) });
  if (!data || data.spendReport.length === 0) return null;
  return (
    <>
      <h2>Prior-period items in {month}</h2>
      <table data-testid="prior-period">
        <tbody>
          {data.spendReport.map((r) => (
            <tr>
              <td>{r.keys[0]}</td>
              <td class="num">{r.totals.map((t) => exactMoney(t.amount, t.unit)).join(' · ')}</td>
              <td class="num">{plural(r.tasksExact, 'task')}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
