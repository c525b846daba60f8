/**
 * Setting, changing and deleting budgets from the console, for those whose role manages a
 * project's budgets (the API decides again and its refusal is shown as it says it).
 */
import { useMutation } from '@urql/preact';
import { useState } from 'preact/hooks';
import { ScopeFields, scopeValueOf } from './scope-fields';
import { errorText, type Unit } from '../api';

const SET = `mutation SetBudget($projectId: ID!, $unit: Unit!, $limit: Decimal!, $period: Period!, $hard: Boolean!, $thresholds: [Int!], $scope: BudgetScope!, $scopeValue: String, $modelScope: ModelScope, $modelValue: String) {
  setBudget(projectId: $projectId, unit: $unit, limit: $limit, period: $period, hard: $hard, thresholds: $thresholds, scope: $scope, scopeValue: $scopeValue, modelScope: $modelScope, modelValue: $modelValue)
}`;
const UPDATE = `mutation UpdateBudget($budgetId: ID!, $limit: Decimal, $hard: Boolean, $thresholds: [Int!]) { updateBudget(budgetId: $budgetId, limit: $limit, hard: $hard, thresholds: $thresholds) }`;
const DELETE = `mutation DeleteBudget($budgetId: ID!) { deleteBudget(budgetId: $budgetId) }`;

/** "50, 80, 100" → [50, 80, 100]; anything else is left for the API to refuse by name. */
function thresholdList(text: string): number[] | string {
  const parts = text
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  return parts.every((p) => /^\d{1,3}$/.test(p))
    ? parts.map(Number)
    : `thresholds: "${text}" is not a list of whole percentages (50, 80, 100)`;
}

const value = (form: HTMLFormElement, name: string) =>
  (form.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement | null)?.value ?? '';

export function NewBudget({ projectId, onDone }: { projectId: string; onDone(): void }) {
  const [result, set] = useMutation(SET);
  const [problem, setProblem] = useState('');
  const [scope, setScope] = useState('PROJECT');
  return (
    <form
      class="card inline-form new-budget"
      aria-label="New budget"
      onSubmit={async (e) => {
        e.preventDefault();
        const form = e.currentTarget;
        const thresholds = thresholdList(value(form, 'thresholds'));
        if (typeof thresholds === 'string') return setProblem(thresholds);
        const answer = await set({
          projectId,
          unit: value(form, 'unit'),
          limit: value(form, 'limit').trim(),
          period: value(form, 'period'),
          hard: (form.elements.namedItem('hard') as HTMLInputElement).checked,
          thresholds,
          scope,
          scopeValue: scopeValueOf(form, scope),
          modelScope: value(form, 'modelScope') || null,
          modelValue: value(form, 'modelScope') ? value(form, 'modelValue').trim() : null,
        });
        setProblem(answer.error ? errorText(answer.error) : '');
        if (!answer.error) {
          form.reset();
          onDone();
        }
      }}
    >
      <h2>New budget (or a new limit for one that exists)</h2>
      <label>
        Limit <input name="limit" required inputMode="decimal" placeholder="100.00" size={10} />
      </label>
      <label>
        Unit{' '}
        <select name="unit">
          <option value="USD">USD</option>
          <option value="CREDITS">credits</option>
        </select>
      </label>
      <label>
        Period{' '}
        <select name="period">
          {['MONTHLY', 'WEEKLY', 'DAILY', 'LIFETIME'].map((p) => (
            <option value={p}>{p.toLowerCase()}</option>
          ))}
        </select>
      </label>
      <ScopeFields scope={scope} onScope={setScope} />
      <label>
        Only{' '}
        <select name="modelScope">
          <option value="">every model</option>
          <option value="MODEL">one model</option>
          <option value="FAMILY">one family</option>
          <option value="KIND">one kind</option>
        </select>{' '}
        <input
          name="modelValue"
          placeholder="claude-opus-5, gpt-5.6, video…"
          size={16}
          aria-label="Which model, family or kind"
        />
      </label>
      <label>
        Thresholds (%) <input name="thresholds" defaultValue="50, 80, 100" size={12} />
      </label>
      <label class="check">
        <input type="checkbox" name="hard" defaultChecked /> hard (refuses past the limit)
      </label>
      <button type="submit" disabled={result.fetching}>
        Set budget
      </button>
      {problem && (
        <p class="error" role="alert">
          {problem}
        </p>
      )}
    </form>
  );
}

/** Change a budget's limit, kind or thresholds; delete it (after a confirmation). */
export function ChangeBudget({
  budget,
  onDone,
}: {
  budget: { budgetId: string; limit: string; hard: boolean; thresholds: number[]; unit: Unit };
  onDone(): void;
}) {
  const [result, update] = useMutation(UPDATE);
  const [deleted, remove] = useMutation(DELETE);
  const [problem, setProblem] = useState('');
  return (
    <details class="change-budget">
      <summary>Change or delete</summary>
      <form
        class="inline-form"
        aria-label="Change budget"
        onSubmit={async (e) => {
          e.preventDefault();
          const form = e.currentTarget;
          const thresholds = thresholdList(value(form, 'thresholds'));
          if (typeof thresholds === 'string') return setProblem(thresholds);
          const answer = await update({
            budgetId: budget.budgetId,
            limit: value(form, 'limit').trim(),
            hard: (form.elements.namedItem('hard') as HTMLInputElement).checked,
            thresholds,
          });
          setProblem(answer.error ? errorText(answer.error) : '');
          if (!answer.error) onDone();
        }}
      >
        <label>
          Limit <input name="limit" required defaultValue={budget.limit} size={10} />
        </label>
        <label>
          Thresholds (%) <input name="thresholds" defaultValue={budget.thresholds.join(', ')} size={12} />
        </label>
        <label class="check">
          <input type="checkbox" name="hard" defaultChecked={budget.hard} /> hard
        </label>
        <button type="submit" disabled={result.fetching}>
          Save
        </button>
        <button
          type="button"
          class="danger"
          disabled={deleted.fetching}
          onClick={async () => {
            if (!confirm('Delete this budget? Its history stays in the audit trail.')) return;
            const answer = await remove({ budgetId: budget.budgetId });
            setProblem(answer.error ? errorText(answer.error) : '');
            if (!answer.error) onDone();
          }}
        >
          Delete budget
        </button>
        {problem && (
          <p class="error" role="alert">
            {problem}
          </p>
        )}
      </form>
    </details>
  );
}
