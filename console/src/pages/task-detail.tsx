/**
 * One task: its attribution, estimate and charge lines, ledger entries, and for a task under
 * review (admin only) the resolution: charge a stated amount (by default what it stands at: its
 * settled charge, or its hold when unsettled) or release. Its net is the charge and adjustments.
 */
import { useMutation, useQuery } from '@urql/preact';
import { useState } from 'preact/hooks';
import { errorText, type Unit } from '../api';
import { may, useSigned } from '../signed';
import { dateTime, groupDigits, exactMoney } from '../format';
import { keyLabel, projectName, useProjects } from '../parts/project-picker';

interface Charge {
  unit: Unit;
  amount: string;
  exactness: string;
  tier: string | null;
  warnings: string[];
  lines: { component: string; quantity: string; rate: string; per: string; amount: string }[];
}

interface LedgerEntry {
  id: string;
  kind: string;
  amount: string;
  unit: Unit;
  createdAt: string;
  effectiveAt: string;
  reason: string | null;
}
interface TaskView {
  taskId: string;
  projectId: string;
  model: string;
  kind: string;
  status: string;
  acceptedAt: string;
  settledAt: string | null;
  held: string;
  overrun: string | null;
  net: string;
  adjustments: string;
  priceBookVersion: number | null;
  needsReview: boolean;
  reviewReason: string | null;
  exactness: string;
  user: string | null;
  apiKeyPrefix: string | null;
  tags: string[];
  estimate: Charge | null;
  charge: Charge | null;
  ledgerEntries: LedgerEntry[];
  resolution: { outcome: string; reason: string; resolvedAt: string } | null;
}

const CHARGE = 'unit amount exactness tier warnings lines { component quantity rate per amount }';
const TASK = `query Task($taskId: ID!) {
  task(taskId: $taskId) {
    taskId projectId model kind status acceptedAt settledAt held overrun net adjustments priceBookVersion needsReview reviewReason exactness
    user apiKeyPrefix tags
    estimate { ${CHARGE} } charge { ${CHARGE} }
    ledgerEntries { id kind amount unit createdAt effectiveAt reason }
    resolution { outcome reason resolvedAt }
  }
}`;
const RESOLVE = `mutation Resolve($taskId: ID!, $outcome: TaskResolution!, $reason: String!, $amount: Decimal) {
  resolveTask(taskId: $taskId, outcome: $outcome, reason: $reason, amount: $amount) { taskId needsReview resolution { outcome reason resolvedAt } }
}`;

export function TaskDetail({ taskId }: { taskId: string }) {
  const [{ data, error }, refetch] = useQuery<{ task: TaskView | null }>({
    query: TASK,
    variables: { taskId },
  });
  const projects = useProjects();
  if (error)
    return (
      <p class="error" role="alert">
        {errorText(error)}
      </p>
    );
  if (!data) return <p class="loading">Loading…</p>;
  const t = data.task;
  if (!t) return <p class="empty">Task {taskId} is not there, or belongs to another project.</p>;
  const unit: Unit = t.charge?.unit ?? t.estimate?.unit ?? 'USD';
  return (
    <section data-ready="task">
      <p>
        <a href="#/tasks">← Tasks</a>
      </p>
      <h1>
        Task {t.taskId} <span class="badge">{t.status}</span>
        {t.needsReview && <span class="badge hard">needs review: {t.reviewReason}</span>}
      </h1>
      <dl class="figures">
        <dt>Project</dt>
        <dd>{projectName(projects, t.projectId)}</dd>
        <dt>Model</dt>
        <dd>
          {t.model} ({t.kind})
        </dd>
        <dt>Accepted</dt>
        <dd>{dateTime(t.acceptedAt)}</dd>
        <dt>Settled</dt>
        <dd>{dateTime(t.settledAt)}</dd>
        <dt>Held</dt>
        <dd>{exactMoney(t.held, unit)}</dd>
        <dt>Overrun</dt>
        <dd>{t.overrun ? exactMoney(t.overrun, unit) : '—'}</dd>
        <dt>Adjustments</dt>
        <dd data-testid="adjustments">
          {t.adjustments === '0'
            ? '—'
            : t.adjustments.startsWith('-')
              ? `credit of ${exactMoney(t.adjustments.slice(1), unit)}`
              : exactMoney(t.adjustments, unit)}
        </dd>
        <dt>Net (charge and adjustments)</dt>
        <dd data-testid="net" data-amount={t.net ?? ''}>
          {t.net === null ? '— (not charged yet)' : exactMoney(t.net, unit)}
        </dd>
        <dt>Price book</dt>
        <dd>version {t.priceBookVersion}</dd>
        <dt>API key</dt>
        <dd>{keyLabel(projects, t.apiKeyPrefix)}</dd>
        <dt>End user</dt>
        <dd>{t.user ?? '—'}</dd>
        <dt>Tags</dt>
        <dd>{t.tags.length ? t.tags.join(', ') : '—'}</dd>
      </dl>
      <ChargeTable title="Estimate (the hold)" charge={t.estimate} />
      <ChargeTable title="Charge" charge={t.charge} />
      <h2>Ledger entries</h2>
      <table class="ledger" data-testid="ledger">
        <thead>
          <tr>
            <th>When (UTC)</th>
            <th>Kind</th>
            <th class="num">Amount</th>
            <th>Reason</th>
          </tr>
        </thead>
        <tbody>
          {t.ledgerEntries.map((e) => (
            <tr>
              <td>{dateTime(e.createdAt)}</td>
              <td>{e.kind}</td>
              <td class="num" data-amount={e.amount}>
                {exactMoney(e.amount, e.unit)}
              </td>
              <td>{e.reason ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {t.resolution && (
        <p class="resolved" data-testid="resolution">
          Resolved {dateTime(t.resolution.resolvedAt)}: {t.resolution.outcome.toLowerCase()} — {t.resolution.reason}
        </p>
      )}
      {t.needsReview && (
        <Resolve
          taskId={t.taskId}
          standing={t.charge?.amount ?? t.held}
          settled={Boolean(t.charge)}
          unit={unit}
          onDone={() => refetch({ requestPolicy: 'network-only' })}
        />
      )}
    </section>
  );
}

function ChargeTable({ title, charge }: { title: string; charge: Charge | null }) {
  if (!charge) return null;
  return (
    <>
      <h2>
        {title}: {exactMoney(charge.amount, charge.unit)} <span class="badge">{charge.exactness.toLowerCase()}</span>
      </h2>
      <table class="lines">
        <thead>
          <tr>
            <th>Component</th>
            <th class="num">Quantity</th>
            <th class="num">Rate</th>
            <th class="num">Amount</th>
          </tr>
        </thead>
        <tbody>
          {charge.lines.map((l) => (
            <tr>
              <td>{l.component}</td>
              <td class="num">{groupDigits(l.quantity)}</td>
              <td class="num">
                {groupDigits(l.rate)}
                {l.per !== '1' ? ` per ${groupDigits(l.per)}` : ''}
              </td>
              <td class="num">{exactMoney(l.amount, charge.unit)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {charge.warnings.map((w) => (
        <p class="hint">{w}</p>
      ))}
    </>
  );
}

/** `standing`: what CHARGE without an amount keeps: the settled charge, or the hold when unsettled. */
function Resolve({
  taskId,
  standing,
  settled,
  unit,
  onDone,
}: {
  taskId: string;
  standing: string;
  settled: boolean;
  unit: Unit;
  onDone(): void;
}) {
  const { viewer } = useSigned();
  const [outcome, setOutcome] = useState<'CHARGE' | 'RELEASE'>('CHARGE');
  const [amount, setAmount] = useState('');
  const [reason, setReason] = useState('');
  const [result, resolve] = useMutation(RESOLVE);
  if (!may(viewer, 'corrections'))
    return (
      <p class="hint">Your role cannot resolve a task under review: an owner, finance or the project's lead can.</p>
    );
  return (
    <form
      class="card resolve"
      onSubmit={async (e) => {
        e.preventDefault();
        const done = await resolve({
          taskId,
          outcome,
          reason,
          amount: outcome === 'CHARGE' && amount.trim() ? amount.trim() : null,
        });
        if (!done.error) onDone();
      }}
    >
      <h2>Resolve</h2>
      <label>
        <input
          type="radio"
          name="outcome"
          value="CHARGE"
          checked={outcome === 'CHARGE'}
          onChange={() => setOutcome('CHARGE')}
        />{' '}
        charge
      </label>
      <label>
        <input
          type="radio"
          name="outcome"
          value="RELEASE"
          checked={outcome === 'RELEASE'}
          onChange={() => setOutcome('RELEASE')}
        />{' '}
        release (charge nothing)
      </label>
      {outcome === 'CHARGE' && (
        <label>
          Amount ({unit}){' '}
          <input
            name="amount"
            inputMode="decimal"
            value={amount}
            placeholder={`${standing} (${settled ? 'the charge as settled' : 'the hold'})`}
            onInput={(e) => setAmount((e.target as HTMLInputElement).value)}
          />
        </label>
      )}
      {outcome === 'CHARGE' && settled && (
        <p class="hint">
          An amount below the settled charge is a credit to the project: the vendor still bills its usage.
        </p>
      )}
      <label>
        Reason (required){' '}
        <input name="reason" required value={reason} onInput={(e) => setReason((e.target as HTMLInputElement).value)} />
      </label>
      <button type="submit" disabled={result.fetching || !reason.trim()}>
        Resolve
      </button>
      {result.error && (
        <p class="error" role="alert">
          {errorText(result.error)}
        </p>
      )}
    </form>
  );
}
