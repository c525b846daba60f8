/**
 * Reconciliation: the vendor's statement against the ledger (decisions §14). Finance and owners
 * upload a statement (a CSV file, streamed to POST /reports/vendor-statements with the session's
 * CSRF token; a column mapping for other layouts), see each import's summary (matched %, every
 * class's count and sums per unit, totals by day and model), and work through the differences:
 * filter, take the vendor's figure (an adjustment, audited) or dispute it with a note, and
 * download them as CSV to send to the vendor.
 */
import { useQuery } from '@urql/preact';
import { useState } from 'preact/hooks';
import { errorText, type Unit } from '../api';
import { dateTime, day, groupDigits, exactMoney } from '../format';
import { StatementUpload } from '../parts/statement-upload';
import { CLASS_NAMES, Differences } from '../parts/vendor-differences';

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
const FIELDS =
  'id importedAt importedBy rows repeated periodFrom periodTo classes { class unit count theirs ours } byDayModel { day model unit theirs ours difference } differencesCsvPath';
const LIST = `query Recons { vendorReconciliations(first: 20) { edges { node { ${FIELDS} } } } }`;
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
