/**
 * A project's limits on the budgets page (decisions §20): what each counts, its amount and its use
 * now; those whose role manages budgets set and delete them (the API decides again and its
 * refusal is shown as it says it).
 */
import { useMutation, useQuery } from '@urql/preact';
import { useState } from 'preact/hooks';
import { ScopeFields, scopeValueOf } from './scope-fields';
import { errorText } from '../api';
import { keyLabel, useProjects } from './project-picker';

interface Limit {
  id: string;
  kind: string;
  amount: number;
  scope: string;
  scopeValue: string | null;
  use: { subject: string; usedExact: string }[];
}

const LIMITS = `query Limits($projectId: ID!) { limits(projectId: $projectId) { id kind amount scope scopeValue use(first: 5) { subject usedExact } } }`;
const SET = `mutation SetLimit($projectId: ID!, $kind: LimitKind!, $amount: Int!, $scope: BudgetScope!, $scopeValue: String) {
  setLimit(projectId: $projectId, kind: $kind, amount: $amount, scope: $scope, scopeValue: $scopeValue)
}`;
const DELETE = `mutation DeleteLimit($limitId: ID!) { deleteLimit(limitId: $limitId) }`;

const KINDS: Record<string, string> = {
  REQUESTS_PER_MINUTE: 'requests a minute',
  TASKS_IN_FLIGHT: 'tasks in flight',
  TOKENS_PER_MINUTE: 'chat tokens a minute',
};

export function ProjectLimits({ projectId, manage }: { projectId: string; manage: boolean }) {
  const projects = useProjects();
  const [{ data, error }, reload] = useQuery<{ limits: Limit[] }>({ query: LIMITS, variables: { projectId } });
  const [, remove] = useMutation(DELETE);
  const [problem, setProblem] = useState('');
  const refresh = () => reload({ requestPolicy: 'network-only' });
  if (error)
    return (
      <p class="error" role="alert">
        {errorText(error)}
      </p>
    );
  if (!data) return <p class="loading">Loading…</p>;
  return (
    <div class="limits" data-testid={`limits-${projectId}`}>
      <h3>Limits</h3>
      {data.limits.length === 0 ? (
        <p class="hint">No limits: requests are refused only by budgets.</p>
      ) : (
        <table class="limits">
          <caption>a request past a limit is refused with 429 and Retry-After; nothing is held or charged</caption>
          <thead>
            <tr>
              <th>Counts</th>
              <th>Scope</th>
              <th class="num">Limit</th>
              <th>Use now</th>
              {manage && <th />}
            </tr>
          </thead>
          <tbody>
            {data.limits.map((l) => (
              <tr>
                <td>{KINDS[l.kind] ?? l.kind}</td>
                <td>
                  {l.scope === 'PROJECT'
                    ? 'whole project'
                    : l.scope === 'EACH_USER'
                      ? 'each end user'
                      : `${l.scope.toLowerCase().replace('_', ' ')} ${l.scope === 'API_KEY' ? keyLabel(projects, l.scopeValue) : (l.scopeValue ?? '')}`}
                </td>
                <td class="num">{l.amount.toLocaleString('en')}</td>
                <td>
                  {l.use.length === 0
                    ? 'none'
                    : l.use
                        .map((u) => `${u.subject ? `${u.subject}: ` : ''}${BigInt(u.usedExact).toLocaleString('en')}`)
                        .join(', ')}
                </td>
                {manage && (
                  <td>
                    <button
                      type="button"
                      onClick={async () => {
                        if (!confirm(`Delete the limit of ${l.amount} ${KINDS[l.kind]}?`)) return;
                        const answer = await remove({ limitId: l.id });
                        setProblem(answer.error ? errorText(answer.error) : '');
                        refresh();
                      }}
                    >
                      Delete
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {problem && (
        <p class="error" role="alert">
          {problem}
        </p>
      )}
      {manage && <NewLimit projectId={projectId} onDone={refresh} />}
    </div>
  );
}

const value = (form: HTMLFormElement, name: string) =>
  (form.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement | null)?.value ?? '';

function NewLimit({ projectId, onDone }: { projectId: string; onDone(): void }) {
  const [result, set] = useMutation(SET);
  const [problem, setProblem] = useState('');
  const [scope, setScope] = useState('PROJECT');
  return (
    <form
      class="card inline-form new-limit"
      aria-label="New limit"
      onSubmit={async (e) => {
        e.preventDefault();
        const form = e.currentTarget;
        const amount = value(form, 'amount').trim();
        if (!/^\d{1,10}$/.test(amount)) return setProblem(`amount: "${amount}" is not a whole number`);
        const answer = await set({
          projectId,
          kind: value(form, 'kind'),
          amount: Number(amount),
          scope,
          scopeValue: scopeValueOf(form, scope),
        });
        setProblem(answer.error ? errorText(answer.error) : '');
        if (!answer.error) {
          form.reset();
          onDone();
        }
      }}
    >
      <h2>New limit (or a new amount for one that exists)</h2>
      <label>
        At most <input name="amount" required inputMode="numeric" placeholder="60" size={8} />
      </label>
      <label>
        Counting{' '}
        <select name="kind">
          {Object.entries(KINDS).map(([k, label]) => (
            <option value={k}>{label}</option>
          ))}
        </select>
      </label>
      <ScopeFields scope={scope} onScope={setScope} />
      <button type="submit" disabled={result.fetching}>
        Set limit
      </button>
      {problem && (
        <p class="error" role="alert">
          {problem}
        </p>
      )}
    </form>
  );
}
