/**
 * Reconciliation: the vendor's statement against the ledger (decisions §14). Finance and owners
 * upload a statement (a CSV file, streamed to POST /reports/vendor-statements with the session's
 * CSRF token; a column mapping for other layouts), see each import's summary (matched %, every
 * class's count and sums per unit, totals by day and model), and work through the differences:
 * filter, take the vendor's figure (an adjustment, audited) or dispute it with a note, and
 * download them as CSV to send to the vendor.
 */
import { useClient, useQuery } from '@urql/preact';
import type { CombinedError } from '@urql/core';
import { useState } from 'preact/hooks';
import { errorText, type Unit } from '../api';
import { may, useSigned } from '../signed';
import { dateTime, day, groupDigits, exactMoney } from '../format';
import { StatementUpload } from '../parts/statement-upload';

interface ClassTotal {
  class: string;
  unit: Unit;
  count: number;
  theirs: string;
  ours: string;
}
interface DayModel {
  day: string;
  model: string;
  unit: Unit;
  theirs: string;
  ours: string;
  difference: string;
}
interface Recon {
  id: string;
  importedAt: string;
  importedBy: string;
  rows: number;
  repeated: number;
  periodFrom: string | null;
  periodTo: string | null;
  classes: ClassTotal[];
  byDayModel: DayModel[];
  differencesCsvPath: string;
}
interface Difference {
  id: string;
  class: string;
  vendorTaskId: string | null;
  taskId: string | null;
  model: string | null;
  unit: Unit;
  ours: string | null;
  theirs: string | null;
  difference: string | null;
  state: string;
  note: string | null;
  resolvedBy: string | null;
}

const FIELDS =
  'id importedAt importedBy rows repeated periodFrom periodTo classes { class unit count theirs ours } byDayModel { day model unit theirs ours difference } differencesCsvPath';
const LIST = `query Recons { vendorReconciliations(first: 20) { edges { node { ${FIELDS} } } } }`;
const DIFFERENCES = `query Differences($r: ID!, $classes: [String!], $state: String) { vendorDifferences(reconciliationId: $r, classes: $classes, state: $state, first: 200) {
  edges { node { id class vendorTaskId taskId model unit ours theirs difference state note resolvedBy } } pageInfo { hasNextPage } } }`;

/** What each class means, in a reader's words. */
const CLASS_NAMES: Record<string, string> = {
  matched: 'matched',
  amount_differs: 'amount differs',
  billed_again: 'billed again (an earlier statement billed it)',
  billed_not_ours: 'billed, not in our ledger',
  ours_not_billed: 'in our ledger, not billed',
  duplicate: 'duplicate in the statement',
  pending: 'still held or unknown here',
};

export function Reconciliation() {
  const [{ data, error }, reload] = useQuery<{ vendorReconciliations: { edges: { node: Recon }[] } }>({ query: LIST });
  const [chosen, setChosen] = useState<string | null>(null);
  if (error)
    return (
      <p class="error" role="alert">
        {errorText(error)}
      </p>
    );
  if (!data) return <p class="loading">Loading…</p>;
  const recons = data.vendorReconciliations.edges.map((e) => e.node);
  const current = recons.find((r) => r.id === chosen) ?? recons[0];
  return (
    <section data-ready="reconciliation">
      <h1>Reconciliation</h1>
      <p class="hint">
        The vendor's statement, task by task, against what spendgate charged. Default columns:{' '}
        <code>task_id,model,time,amount,unit</code> (or <code>currency</code>). The same file imported twice changes
        nothing.
      </p>
      <StatementUpload
        done={(id) => {
          setChosen(id);
          reload({ requestPolicy: 'network-only' });
        }}
      />
      {recons.length === 0 ? (
        <p class="empty">No statement imported yet.</p>
      ) : (
        <>
          <h2>Imports</h2>
          <table data-testid="imports">
            <thead>
              <tr>
                <th>Imported</th>
                <th>By</th>
                <th>Period</th>
                <th class="num">Rows</th>
                <th class="num">Matched</th>
              </tr>
            </thead>
            <tbody>
              {recons.map((r) => (
                <tr data-import={r.id} class={r.id === current?.id ? 'selected' : ''}>
                  <td>
                    <button type="button" class="link" onClick={() => setChosen(r.id)}>
                      {dateTime(r.importedAt)}
                    </button>
                  </td>
                  <td>{r.importedBy}</td>
                  <td>{r.periodFrom ? `${day(r.periodFrom)} – ${day(r.periodTo!)}` : '—'}</td>
                  <td class="num">
                    {groupDigits(String(r.rows - r.repeated))}
                    {r.repeated
                      ? ` (+${groupDigits(String(r.repeated))} skipped: an earlier statement holds them)`
                      : ''}
                  </td>
                  <td class="num">{matchedShare(r)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {current && <Summary recon={current} key={current.id} />}
        </>
      )}
    </section>
  );
}

const matchedShare = (r: Recon) => {
  const matched = r.classes.filter((c) => c.class === 'matched').reduce((n, c) => n + c.count, 0);
  // Of the rows this statement brought: those an earlier one held were skipped, not matched again.
  const fresh = r.rows - r.repeated;
  return fresh ? `${((100 * matched) / fresh).toFixed(1)} %` : '—';
};

function Summary({ recon }: { recon: Recon }) {
  const differing = recon.byDayModel.filter((d) => !/^-?0(\.0*)?$/.test(d.difference)); // a decimal string, never a float;
  return (
    <>
      <h2>Summary · {matchedShare(recon)} matched</h2>
      <table data-testid="classes">
        <thead>
          <tr>
            <th>Class</th>
            <th class="num">Tasks</th>
            <th class="num">Theirs</th>
            <th class="num">Ours</th>
          </tr>
        </thead>
        <tbody>
          {recon.classes.map((c) => (
            <tr data-class={c.class}>
              <td>{CLASS_NAMES[c.class] ?? c.class}</td>
              <td class="num">{groupDigits(String(c.count))}</td>
              <td class="num">{exactMoney(c.theirs, c.unit)}</td>
              <td class="num">{exactMoney(c.ours, c.unit)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <details>
        <summary>
          Totals by day and model ({recon.byDayModel.length} rows, {differing.length} with a difference)
        </summary>
        <table data-testid="by-day-model">
          <thead>
            <tr>
              <th>Day</th>
              <th>Model</th>
              <th class="num">Theirs</th>
              <th class="num">Ours</th>
              <th class="num">Difference</th>
            </tr>
          </thead>
          <tbody>
            {recon.byDayModel.map((d) => (
              <tr>
                <td>{d.day}</td>
                <td>{d.model}</td>
                <td class="num">{exactMoney(d.theirs, d.unit)}</td>
                <td class="num">{exactMoney(d.ours, d.unit)}</td>
                <td class="num">{exactMoney(d.difference, d.unit)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
      <Differences recon={recon} />
    </>
  );
}

function Differences({ recon }: { recon: Recon }) {
  const { viewer } = useSigned();
  const client = useClient();
  const [kind, setKind] = useState('');
  const [state, setState] = useState('open');
  const [failure, setFailure] = useState<CombinedError | undefined>();
  const variables = { r: recon.id, classes: kind ? [kind] : null, state: state || null };
  const [{ data, error }, reload] = useQuery<{
    vendorDifferences: { edges: { node: Difference }[]; pageInfo: { hasNextPage: boolean } };
  }>({ query: DIFFERENCES, variables });
  const act = async (query: string, vars: Record<string, string>) => {
    const done = await client.mutation(query, vars).toPromise();
    setFailure(done.error);
    reload({ requestPolicy: 'network-only' });
  };
  const items = data?.vendorDifferences.edges.map((e) => e.node) ?? [];
  return (
    <>
      <h2>Differences</h2>
      <p class="filters">
        <label>
          Class{' '}
          <select
            value={kind}
            onChange={(e) => setKind((e.currentTarget as HTMLSelectElement).value)}
            data-testid="class-filter"
          >
            <option value="">all</option>
            {Object.entries(CLASS_NAMES)
              .filter(([c]) => c !== 'matched')
              .map(([c, name]) => (
                <option value={c}>{name}</option>
              ))}
          </select>
        </label>{' '}
        <label>
          State{' '}
          <select
            value={state}
            onChange={(e) => setState((e.currentTarget as HTMLSelectElement).value)}
            data-testid="state-filter"
          >
            <option value="">all</option>
            <option value="open">open</option>
            <option value="accepted">accepted</option>
            <option value="disputed">disputed</option>
          </select>
        </label>{' '}
        <a href={recon.differencesCsvPath} download>
          Differences as CSV (for the vendor)
        </a>
      </p>
      {failure && (
        <p class="error" role="alert">
          {errorText(failure)}
        </p>
      )}
      {error && (
        <p class="error" role="alert">
          {errorText(error)}
        </p>
      )}
      {data && items.length === 0 && <p class="none">No difference here.</p>}
      {items.length > 0 && (
        <table data-testid="differences">
          <thead>
            <tr>
              <th>Class</th>
              <th>Vendor task</th>
              <th>Model</th>
              <th class="num">Ours</th>
              <th class="num">Theirs</th>
              <th class="num">Difference</th>
              <th>State</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {items.map((i) => (
              <tr data-difference={i.id}>
                <td>{CLASS_NAMES[i.class] ?? i.class}</td>
                <td>{i.taskId ? <a href={`#/tasks/${i.taskId}`}>{i.vendorTaskId}</a> : i.vendorTaskId}</td>
                <td>{i.model ?? '—'}</td>
                <td class="num">{i.ours === null ? '—' : exactMoney(i.ours, i.unit)}</td>
                <td class="num">{i.theirs === null ? '—' : exactMoney(i.theirs, i.unit)}</td>
                <td class="num">{i.difference === null ? '—' : exactMoney(i.difference, i.unit)}</td>
                <td>
                  {i.state}
                  {i.note ? `: ${i.note}` : ''}
                  {i.resolvedBy ? ` (${i.resolvedBy})` : ''}
                </td>
                <td>
                  {i.state === 'open' && may(viewer, 'books') && i.class !== 'pending' && (
                    <>
                      <button
                        type="button"
                        onClick={() =>
                          void act('mutation($d: ID!) { acceptVendorDifference(id: $d) { id } }', { d: i.id })
                        }
                      >
                        {i.class === 'billed_not_ours' || i.class === 'duplicate'
                          ? 'Looked at'
                          : "Take vendor's figure"}
                      </button>{' '}
                      <button
                        type="button"
                        class="link"
                        onClick={() => {
                          const note = prompt(
                            'What is disputed? (sent to the vendor with the CSV, kept in the audit trail)',
                          );
                          if (note?.trim())
                            void act(
                              'mutation($d: ID!, $n: String!) { disputeVendorDifference(id: $d, note: $n) { id } }',
                              { d: i.id, n: note.trim() },
                            );
                        }}
                      >
                        dispute
                      </button>
                    </>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {data?.vendorDifferences.pageInfo.hasNextPage && (
        <p class="hint">The first 200 are shown: narrow the filters, or download the CSV for all.</p>
      )}
    </>
  );
}
