/**
 * Tasks, newest first, filtered by project, model, status and review; cursor paging. The review
 * queue is the same list filtered to tasks that need an operator (decisions §10).
 */
import { useQuery } from '@urql/preact';
import { useState } from 'preact/hooks';
import { errorText, type Unit } from '../api';
import { may, useSigned } from '../app';
import { dateTime, money } from '../format';
import { Empty } from '../parts/empty';

export interface TaskRow {
  taskId: string;
  projectId: string;
  model: string;
  kind: string;
  status: string;
  acceptedAt: string;
  held: string;
  needsReview: boolean;
  reviewReason: string | null;
  exactness: string;
  user: string | null;
  apiKeyPrefix: string | null;
  estimate: { unit: Unit; amount: string } | null;
  charge: { unit: Unit; amount: string; exactness: string } | null;
  /** charge + adjustments (a credit is negative); null until charged */
  net: string | null;
  adjustments: string;
}

const TASKS = `query Tasks($first: Int!, $after: String, $filter: TaskFilterInput) {
  tasks(first: $first, after: $after, filter: $filter) {
    edges { node { taskId projectId model kind status acceptedAt held needsReview reviewReason exactness user apiKeyPrefix estimate { unit amount } charge { unit amount exactness } net adjustments } }
    pageInfo { hasNextPage endCursor }
  }
}`;

const STATUSES = ['submitting', 'processing', 'ready', 'failed', 'unknown', 'rejected'];
const PAGE = 50;

export function Tasks({ review }: { review: boolean }) {
  const { projectId, viewer } = useSigned();
  const [model, setModel] = useState('');
  const [status, setStatus] = useState('');
  const [reviewOnly, setReviewOnly] = useState(false);
  // Cursors of the pages before this one, so "newer" goes back.
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const after = cursors.at(-1) ?? null;
  const filter = {
    ...(projectId ? { projectIds: [projectId] } : {}),
    ...(model.trim() ? { models: [model.trim()] } : {}),
    ...(status ? { statuses: [status] } : {}),
    ...(review || reviewOnly ? { needsReview: true } : {}),
  };
  const [{ data, error, fetching }] = useQuery<{ tasks: { edges: { node: TaskRow }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } }>({
    query: TASKS,
    variables: { first: PAGE, after, filter },
  });
  const reset = () => setCursors([null]);
  const edges = data?.tasks.edges ?? [];

  return (
    <section data-ready={fetching || !data ? undefined : review ? 'review' : 'tasks'}>
      <div class="page-head">
        <h1>{review ? 'Review queue' : 'Tasks'}</h1>
        <label>
          Model <input name="model" value={model} onChange={(e) => (setModel((e.target as HTMLInputElement).value), reset())} placeholder="any" />
        </label>
        <label>
          Status{' '}
          <select name="status" value={status} onChange={(e) => (setStatus((e.target as HTMLSelectElement).value), reset())}>
            <option value="">any</option>
            {STATUSES.map((s) => (
              <option value={s}>{s}</option>
            ))}
          </select>
        </label>
        {!review && (
          <label>
            <input type="checkbox" name="needsReview" checked={reviewOnly} onChange={(e) => (setReviewOnly((e.target as HTMLInputElement).checked), reset())} /> needs review
          </label>
        )}
      </div>
      {review && (
        <p class="hint">
          Tasks whose charge an operator must decide: an unknown outcome, a charge settled at its estimate, or an overrun. {may(viewer, 'corrections') ? 'Open one to charge or release it.' : 'Your role cannot resolve them: an owner, finance or the project\'s lead can.'}
        </p>
      )}
      {error && <p class="error" role="alert">{errorText(error)}</p>}
      {data && edges.length === 0 && (
        <Empty>{review ? 'Nothing needs review.' : 'No tasks match. Tasks appear here as soon as a client submits one through the gateway.'}</Empty>
      )}
      {edges.length > 0 && (
        <table class="tasks">
          <thead>
            <tr>
              <th>Task</th>
              <th>Accepted (UTC)</th>
              <th>Model</th>
              <th>Status</th>
              <th class="num">Held</th>
              <th class="num">Charge (net)</th>
              <th>User</th>
              <th>Key</th>
              <th>Review</th>
            </tr>
          </thead>
          <tbody>
            {edges.map(({ node: t }) => {
              const unit = t.charge?.unit ?? t.estimate?.unit ?? 'USD';
              return (
                <tr data-testid={`task-${t.taskId}`}>
                  <td>
                    <a href={`#/tasks/${encodeURIComponent(t.taskId)}`}>{t.taskId}</a>
                  </td>
                  <td>{dateTime(t.acceptedAt)}</td>
                  <td>{t.model}</td>
                  <td>{t.status}</td>
                  <td class="num">{money(t.held, unit)}</td>
                  <td class="num">{t.charge ? <NetCharge task={t} /> : '—'}</td>
                  <td>{t.user ?? '—'}</td>
                  <td>{t.apiKeyPrefix ?? '—'}</td>
                  <td>{t.needsReview ? <span class="badge hard">{t.reviewReason ?? 'needs review'}</span> : ''}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      <div class="pager">
        <button type="button" disabled={cursors.length < 2} onClick={() => setCursors(cursors.slice(0, -1))}>
          ← Newer
        </button>
        <button type="button" disabled={!data?.tasks.pageInfo.hasNextPage} onClick={() => setCursors([...cursors, data!.tasks.pageInfo.endCursor])}>
          Older →
        </button>
      </div>
    </section>
  );
}

/** What a task costs after its adjustments; the charge and the credit beside it when they differ. */
export function NetCharge({ task }: { task: Pick<TaskRow, 'charge' | 'net' | 'adjustments'> }) {
  const charge = task.charge!;
  const label = charge.exactness === 'ESTIMATE' ? ' (estimate)' : '';
  if (task.adjustments === '0' || task.net === null) return <span data-net={task.net ?? charge.amount}>{money(charge.amount, charge.unit)}{label}</span>;
  const credit = task.adjustments.startsWith('-');
  return (
    <span data-net={task.net} title={`charge ${charge.amount}, ${credit ? 'credit' : 'adjustment'} ${task.adjustments}`}>
      {money(task.net, charge.unit)}
      {label} <small>({credit ? 'after a credit of' : 'after an adjustment of'} {money(credit ? task.adjustments.slice(1) : task.adjustments, charge.unit)})</small>
    </span>
  );
}
