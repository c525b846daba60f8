/**
 * Tasks, newest first, filtered by project, model, status and review; cursor paging. The review
 * queue is the same list filtered to tasks that need an operator (decisions §10).
 */
import { useQuery } from '@urql/preact';
import { useState } from 'preact/hooks';
import { errorText, type Money, type Unit } from '../api';
import { may, useSigned } from '../signed';
import { dateTime, plural } from '../format';
import { Amount } from '../parts/amounts';
import { Empty } from '../parts/empty';
import { keyLabel, projectName, useProjects } from '../parts/project-picker';
import { setParams, useRoute } from '../route';
import { isDay } from '../range';

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

const TOTALS = `query TaskTotals($filter: TaskFilterInput) { taskTotals(filter: $filter) { tasks totals { unit amount } withoutTask { unit amount } } }`;

const STATUSES = ['submitting', 'processing', 'ready', 'failed', 'unknown', 'rejected'];
const PAGE = 50;

/** The filters the URL may carry (a drill-down from the overview sets them), and how a chip names each. */
const CHIPS: Array<[string, string]> = [
  ['from', 'from'],
  ['to', 'to (inclusive)'],
  ['project', 'project'],
  ['model', 'model'],
  ['key', 'key'],
  ['user', 'user'],
  ['tag', 'tag'],
  ['status', 'status'],
  ['charged', 'charged only'],
  ['review', 'needs review'],
  ['posted', 'money posted in these days, as the overview counts it'],
];

/**
 * The URL's filters as the API's TaskFilterInput (days are whole UTC days, `to` inclusive; the
 * API's `to` is the next midnight, exclusive). `posted=yes` (a drill-down from the overview): the
 * days are when money was posted, as spendReport counts it, not when tasks were accepted.
 */
export function taskFilter(
  params: URLSearchParams,
  pickedProject: string | null,
  review: boolean,
): Record<string, unknown> {
  const one = (name: string) => params.get(name)?.trim() || null;
  const project = one('project') ?? pickedProject;
  const from = one('from');
  const to = one('to');
  const posted = one('posted') === 'yes' && isDay(from) && isDay(to);
  return {
    ...(project ? { projectIds: [project] } : {}),
    ...(one('model') ? { models: [one('model')] } : {}),
    ...(one('status') ? { statuses: [one('status')] } : {}),
    ...(one('key') ? { apiKeys: [one('key')] } : {}),
    ...(one('user') ? { users: [one('user')] } : {}),
    ...(one('tag') ? { tags: [one('tag')] } : {}),
    ...(one('charged') === 'yes' ? { charged: true } : {}),
    ...(review || one('review') === 'yes' ? { needsReview: true } : {}),
    ...(isDay(from) ? { [posted ? 'postedFrom' : 'from']: `${from}T00:00:00.000Z` } : {}),
    ...(isDay(to)
      ? { [posted ? 'postedTo' : 'to']: new Date(Date.parse(`${to}T00:00:00Z`) + 86_400_000).toISOString() }
      : {}),
  };
}

export function Tasks({ review }: { review: boolean }) {
  const { projectId, viewer } = useSigned();
  const { params } = useRoute();
  const projects = useProjects();
  const filter = taskFilter(params, projectId, review);
  // Cursors of the pages before this one (so "newer" goes back), for this filter only.
  const key = JSON.stringify(filter);
  const [paging, setPaging] = useState<{ key: string; cursors: (string | null)[] }>({ key, cursors: [null] });
  const cursors = paging.key === key ? paging.cursors : [null];
  const setCursors = (next: (string | null)[]) => setPaging({ key, cursors: next });
  const after = cursors.at(-1) ?? null;
  const [{ data, error, fetching }] = useQuery<{
    tasks: { edges: { node: TaskRow }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } };
  }>({
    query: TASKS,
    variables: { first: PAGE, after, filter },
  });
  const [totals] = useQuery<{ taskTotals: { tasks: number; totals: Money[]; withoutTask: Money[] } }>({
    query: TOTALS,
    variables: { filter },
  });
  const edges = data?.tasks.edges ?? [];
  const chips = CHIPS.filter(([name]) => params.get(name) && !(review && name === 'review'));
  const chipText = (name: string, value: string) =>
    name === 'project'
      ? projectName(projects, value)
      : name === 'key'
        ? keyLabel(projects, value)
        : name === 'charged' || name === 'review' || name === 'posted'
          ? ''
          : value;

  return (
    <section data-ready={fetching || !data || !totals.data ? undefined : review ? 'review' : 'tasks'}>
      <div class="page-head">
        <h1>{review ? 'Review queue' : 'Tasks'}</h1>
        <label>
          Model{' '}
          <input
            name="model"
            value={params.get('model') ?? ''}
            onChange={(e) => setParams({ model: (e.target as HTMLInputElement).value.trim() || null })}
            placeholder="any"
          />
        </label>
        <label>
          Status{' '}
          <select
            name="status"
            value={params.get('status') ?? ''}
            onChange={(e) => setParams({ status: (e.target as HTMLSelectElement).value || null })}
          >
            <option value="">any</option>
            {STATUSES.map((s) => (
              <option value={s}>{s}</option>
            ))}
          </select>
        </label>
        {!review && (
          <label>
            <input
              type="checkbox"
              name="needsReview"
              checked={params.get('review') === 'yes'}
              onChange={(e) => setParams({ review: (e.target as HTMLInputElement).checked ? 'yes' : null })}
            />{' '}
            needs review
          </label>
        )}
      </div>
      {chips.length > 0 && (
        <ul class="chips" data-testid="chips" aria-label="Filters">
          {chips.map(([name, label]) => (
            <li data-filter={name}>
              {label}
              {chipText(name, params.get(name)!) ? `: ${chipText(name, params.get(name)!)}` : ''}
              <button
                type="button"
                class="chip-remove"
                aria-label={`remove the filter ${label}`}
                onClick={() => setParams({ [name]: null })}
              >
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      {totals.data && (
        <p class="totals" data-testid="task-totals" data-tasks={totals.data.taskTotals.tasks}>
          {plural(totals.data.taskTotals.tasks, 'task')}
          {totals.data.taskTotals.totals.map((m) => (
            <span data-total-unit={m.unit} data-amount={m.amount}>
              {params.get('posted') === 'yes' ? ' · posted ' : ' · charged '}
              <Amount amount={m.amount} unit={m.unit} />
            </span>
          ))}
          {totals.data.taskTotals.withoutTask.map((m) => (
            <span data-without-task-unit={m.unit} data-amount={m.amount}>
              {' · and adjustments with no task '}
              <Amount amount={m.amount} unit={m.unit} />
            </span>
          ))}
        </p>
      )}
      {review && (
        <p class="hint">
          Tasks whose charge an operator must decide: an unknown outcome, a charge settled at its estimate, or an
          overrun.{' '}
          {may(viewer, 'corrections')
            ? 'Open one to charge or release it.'
            : "Your role cannot resolve them: an owner, finance or the project's lead can."}
        </p>
      )}
      {error && (
        <p class="error" role="alert">
          {errorText(error)}
        </p>
      )}
      {data && edges.length === 0 && (
        <Empty>
          {review
            ? 'Nothing needs review.'
            : 'No tasks match. Tasks appear here as soon as a client submits one through the gateway.'}
        </Empty>
      )}
      {edges.length > 0 && (
        <div class="scroll">
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
                    <td class="num">
                      <Amount amount={t.held} unit={unit} />
                    </td>
                    <td class="num">{t.charge ? <NetCharge task={t} /> : '—'}</td>
                    <td>{t.user ?? '—'}</td>
                    <td>{keyLabel(projects, t.apiKeyPrefix)}</td>
                    <td>{t.needsReview ? <span class="badge hard">{t.reviewReason ?? 'needs review'}</span> : ''}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <div class="pager">
        <button type="button" disabled={cursors.length < 2} onClick={() => setCursors(cursors.slice(0, -1))}>
          ← Newer
        </button>
        <button
          type="button"
          disabled={!data?.tasks.pageInfo.hasNextPage}
          onClick={() => setCursors([...cursors, data!.tasks.pageInfo.endCursor])}
        >
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
  if (task.adjustments === '0' || task.net === null)
    return (
      <span data-net={task.net ?? charge.amount}>
        <Amount amount={charge.amount} unit={charge.unit} />
        {label}
      </span>
    );
  const credit = task.adjustments.startsWith('-');
  return (
    <span
      data-net={task.net}
      title={`charge ${charge.amount}, ${credit ? 'credit' : 'adjustment'} ${task.adjustments}`}
    >
      <Amount amount={task.net} unit={charge.unit} />
      {label}{' '}
      <small>
        ({credit ? 'after a credit of' : 'after an adjustment of'}{' '}
        <Amount amount={credit ? task.adjustments.slice(1) : task.adjustments} unit={charge.unit} />)
      </small>
    </span>
  );
}
