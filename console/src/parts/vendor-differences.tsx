/**
 * A vendor statement's differences (decisions §14), on the reconciliation page: filtered by class
 * and state, each taken (the vendor's figure becomes an adjustment, audited) or disputed with a
 * note by finance and owners, and downloaded as CSV to send to the vendor.
 */
import { useClient, useQuery } from '@urql/preact';
import type { CombinedError } from '@urql/core';
import { useState } from 'preact/hooks';
import { errorText, type Unit } from '../api';
import { may, useSigned } from '../signed';
import { exactMoney } from '../format';

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

const DIFFERENCES = `query Differences($r: ID!, $classes: [String!], $state: String) { vendorDifferences(reconciliationId: $r, classes: $classes, state: $state, first: 200) {
  edges { node { id class vendorTaskId taskId model unit ours theirs difference state note resolvedBy } } pageInfo { hasNextPage } } }`;

/** What each class means, in a reader's words. */
export const CLASS_NAMES: Record<string, string> = {
  matched: 'matched',
  amount_differs: 'amount differs',
  billed_again: 'billed again (an earlier statement billed it)',
  billed_not_ours: 'billed, not in our ledger',
  ours_not_billed: 'in our ledger, not billed',
  duplicate: 'duplicate in the statement',
  pending: 'still held or unknown here',
};

export function Differences({ recon }: { recon: { id: string; differencesCsvPath: string } }) {
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
