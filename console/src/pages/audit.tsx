/**
 * The audit trail (owners and finance: everything; a lead: its projects' records): who changed
 * what, when, from where, with what it was before and after. Filters by actor, action, project
 * and days; the same filters download as CSV (with each record's hash, to check the chain
 * elsewhere). Newest first, 50 at a time.
 */
import { useQuery } from '@urql/preact';
import { useState } from 'preact/hooks';
import { errorText } from '../api';
import { useSigned } from '../signed';
import { dateTime } from '../format';
import { Empty } from '../parts/empty';
import { projectName, useProjects } from '../parts/project-picker';

interface Record {
  seq: string;
  at: string;
  actorKind: string;
  actor: string;
  action: string;
  target: string | null;
  projectId: string | null;
  before: string | null;
  after: string | null;
  clientAddress: string | null;
  userAgent: string | null;
}

const AUDIT = `query Audit($actor: String, $action: String, $projectId: ID, $from: DateTime, $to: DateTime, $after: String) {
  auditLog(actor: $actor, action: $action, projectId: $projectId, from: $from, to: $to, first: 50, after: $after) {
    edges { node { seq at actorKind actor action target projectId before after clientAddress userAgent } }
    pageInfo { hasNextPage endCursor }
  }
}`;

interface Filters {
  actor: string;
  action: string;
  from: string;
  to: string;
}

const dayStart = (d: string) => (d ? new Date(`${d}T00:00:00Z`).toISOString() : null);
const dayAfter = (d: string) => (d ? new Date(new Date(`${d}T00:00:00Z`).getTime() + 86_400_000).toISOString() : null);

export function Audit() {
  const { projectId } = useSigned();
  const projects = useProjects();
  const [typed, setTyped] = useState<Filters>({ actor: '', action: '', from: '', to: '' });
  const [filters, setFilters] = useState<Filters>(typed);
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const variables = {
    actor: filters.actor || null,
    action: filters.action || null,
    projectId,
    from: dayStart(filters.from),
    to: dayAfter(filters.to),
    after: cursors.at(-1) ?? null,
  };
  const [{ data, error, fetching }] = useQuery<{
    auditLog: { edges: { node: Record }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } };
  }>({ query: AUDIT, variables });
  const csv = new URLSearchParams(
    Object.entries({
      actor: variables.actor,
      action: variables.action,
      projectId,
      from: variables.from,
      to: variables.to,
    }).filter((e): e is [string, string] => !!e[1]),
  );
  const field = (name: keyof Filters, label: string, type = 'text', placeholder = '') => (
    <label>
      {label}{' '}
      <input
        name={name}
        type={type}
        value={typed[name]}
        placeholder={placeholder}
        onInput={(e) => setTyped({ ...typed, [name]: (e.target as HTMLInputElement).value })}
      />
    </label>
  );
  return (
    <section data-ready={data ? 'audit' : undefined}>
      <div class="page-head">
        <h1>Audit trail</h1>
        <a class="button" href={`/reports/audit.csv?${csv}`} download="audit.csv" data-testid="audit-csv">
          Download CSV
        </a>
      </div>
      <form
        class="card inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          setFilters(typed);
          setCursors([null]);
        }}
      >
        {field('actor', 'Who', 'text', 'an email, a key prefix, ADMIN_TOKEN')}
        {field('action', 'Action', 'text', 'budget. or sign-in.failed')}
        {field('from', 'From (UTC day)', 'date')}
        {field('to', 'To (UTC day, included)', 'date')}
        <button type="submit">Filter</button>
        <p class="hint">
          Project: the one picked at the top ({projectId ? projectName(projects, projectId) : 'all you may see'}).
        </p>
      </form>
      {error && (
        <p class="error" role="alert">
          {errorText(error)}
        </p>
      )}
      {!data && !error && <p class="loading">Loading…</p>}
      {data && data.auditLog.edges.length === 0 && <Empty>No record matches these filters.</Empty>}
      {data && data.auditLog.edges.length > 0 && (
        <table data-testid="audit">
          <thead>
            <tr>
              <th>When (UTC)</th>
              <th>Who</th>
              <th>What</th>
              <th>On</th>
              <th>Project</th>
              <th>Before → after</th>
              <th>From</th>
            </tr>
          </thead>
          <tbody>
            {data.auditLog.edges.map(({ node: r }) => (
              <tr data-seq={r.seq}>
                <td>{dateTime(r.at)}</td>
                <td>
                  {r.actor}
                  {r.actorKind !== 'person' && <span class="hint"> ({r.actorKind})</span>}
                </td>
                <td>{r.action}</td>
                <td>{r.target ?? '—'}</td>
                <td>{r.projectId ? projectName(projects, r.projectId) : '—'}</td>
                <td class="change">
                  <Change before={r.before} after={r.after} />
                </td>
                <td title={r.userAgent ?? ''}>{r.clientAddress ?? '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div class="pager">
        {cursors.length > 1 && (
          <button type="button" class="link" onClick={() => setCursors(cursors.slice(0, -1))}>
            ← newer
          </button>
        )}
        {data?.auditLog.pageInfo.hasNextPage && (
          <button
            type="button"
            class="link"
            disabled={fetching}
            onClick={() => setCursors([...cursors, data.auditLog.pageInfo.endCursor])}
          >
            older →
          </button>
        )}
      </div>
    </section>
  );
}

/** Before and after as the fields that differ (the records hold canonical JSON). */
function Change({ before, after }: { before: string | null; after: string | null }) {
  const parse = (text: string | null): { [k: string]: unknown } | null => {
    try {
      const v = text ? JSON.parse(text) : null;
      return v && typeof v === 'object' && !Array.isArray(v) ? v : null;
    } catch {
      return null;
    }
  };
  const b = parse(before);
  const a = parse(after);
  if (!b && !a) return <span class="hint">—</span>;
  const keys = [...new Set([...Object.keys(b ?? {}), ...Object.keys(a ?? {})])].filter(
    (k) => JSON.stringify(b?.[k]) !== JSON.stringify(a?.[k]),
  );
  const show = (v: unknown) => (v === undefined ? '—' : typeof v === 'string' ? v : JSON.stringify(v));
  return (
    <ul class="diff">
      {keys.slice(0, 8).map((k) => (
        <li>
          <b>{k}</b>: {b ? `${show(b[k])} → ` : ''}
          {show(a?.[k])}
        </li>
      ))}
      {keys.length > 8 && <li class="hint">and {keys.length - 8} more (see the CSV)</li>}
    </ul>
  );
}
