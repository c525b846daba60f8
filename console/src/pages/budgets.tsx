/**
 * Budgets of the picked project: each one's use as a bar with what is held shown apart, its
 * thresholds, the projection to period end, thresholds crossed and recent refusals; an EACH_USER
 * budget lists its users' own balances. Then the project's limits (decisions §20) and their use now.
 */
import { useQuery } from '@urql/preact';
import { errorText, type Unit } from '../api';
import { may, useSigned } from '../signed';
import { catalogPart, dateTime } from '../format';
import { Amount } from '../parts/amounts';
import { Empty } from '../parts/empty';
import { ChangeBudget, NewBudget } from '../parts/budget-forms';
import { ProjectLimits } from '../parts/project-limits';
import { keyLabel, projectName, useProjects } from '../parts/project-picker';

interface Budget {
  budgetId: string;
  unit: Unit;
  period: string;
  hard: boolean;
  scope: string;
  scopeValue: string | null;
  modelScope: 'MODEL' | 'FAMILY' | 'KIND' | null;
  modelValue: string | null;
  limit: string;
  spent: string;
  held: string;
  heldUnderReview: string;
  remaining: string;
  percentUsed: string;
  projectedSpend: string | null;
  forecastSpend: string | null;
  runsOutAt: string | null;
  thresholds: number[];
  periodStart: string | null;
  periodEnd: string | null;
  user: string | null;
  users: {
    edges: { node: { user: string; spent: string; held: string; remaining: string } }[];
    pageInfo: { hasNextPage: boolean };
  };
  events: { kind: 'THRESHOLD' | 'REFUSED'; at: string; threshold: number | null; user: string | null }[];
}

const BUDGETS = `query Budgets($projectId: ID!) {
  budgetStatus(projectId: $projectId) {
    budgetId unit period hard scope scopeValue modelScope modelValue limit spent held heldUnderReview remaining percentUsed projectedSpend forecastSpend runsOutAt thresholds periodStart periodEnd user
    users(first: 20) { edges { node { user spent held remaining } } pageInfo { hasNextPage } }
    events(first: 10) { kind at threshold user }
  }
}`;

export function Budgets() {
  const { projectId, viewer } = useSigned();
  const projects = useProjects();
  if (!projectId) {
    if (projects.length === 0) {
      return (
        <Empty>
          No projects yet. Create one and a key: <code>npm run cli -- project create my-team</code>, then{' '}
          <code>npm run cli -- key create --project my-team</code>.
        </Empty>
      );
    }
    return (
      <section data-ready="budgets">
        <h1>Budgets</h1>
        <p class="hint">
          Every project's budgets, one after another; choose a project in the bar at the top to see only its own.
        </p>
        <ul class="projects">
          {projects.map((p) => (
            <li>
              <ProjectBudgets projectId={p.id} title={p.name} />
            </li>
          ))}
        </ul>
      </section>
    );
  }
  return (
    <section data-ready="budgets">
      <h1>Budgets</h1>
      <ProjectBudgets
        projectId={projectId}
        title={viewer.kind === 'PROJECT_KEY' ? (viewer.projectName ?? '') : projectName(projects, projectId)}
      />
    </section>
  );
}

function ProjectBudgets({ projectId, title }: { projectId: string; title: string }) {
  const { viewer } = useSigned();
  const [{ data, error }, reload] = useQuery<{ budgetStatus: Budget[] }>({ query: BUDGETS, variables: { projectId } });
  const manage = may(viewer, 'budgets') && viewer.kind !== 'PROJECT_KEY';
  const refresh = () => reload({ requestPolicy: 'network-only' });
  if (error)
    return (
      <p class="error" role="alert">
        {errorText(error)}
      </p>
    );
  if (!data) return <p class="loading">Loading…</p>;
  return (
    <div class="project-budgets" data-testid={`budgets-${projectId}`}>
      <h2>{title}</h2>
      {data.budgetStatus.length === 0 && (
        <Empty>
          {manage
            ? 'No budget yet: set one below.'
            : "No budget yet. An owner, finance or this project's lead can set one here."}
        </Empty>
      )}
      {data.budgetStatus.map((b) => (
        <BudgetCard budget={b} manage={manage} onChanged={refresh} />
      ))}
      {manage && <NewBudget projectId={projectId} onDone={refresh} />}
      <ProjectLimits projectId={projectId} manage={manage} />
    </div>
  );
}

const share = (part: string, limit: string) =>
  Math.max(0, Math.min(100, (Number(part) / Math.max(Number(limit), 1e-12)) * 100));

function BudgetCard({ budget: b, manage, onChanged }: { budget: Budget; manage: boolean; onChanged(): void }) {
  const projects = useProjects();
  const value = b.scope === 'API_KEY' ? keyLabel(projects, b.scopeValue) : (b.scopeValue ?? '');
  const scope =
    b.scope === 'PROJECT'
      ? 'whole project'
      : b.scope === 'EACH_USER'
        ? 'each end user'
        : `${b.scope.toLowerCase().replace('_', ' ')} ${value}`;
  const part = b.modelScope ? ` · ${catalogPart(b.modelScope, b.modelValue)}` : '';
  const refusals = b.events.filter((e) => e.kind === 'REFUSED');
  return (
    <article class="card budget" data-testid={`budget-${b.budgetId}`}>
      <header>
        <h3>
          <Amount amount={b.limit} unit={b.unit} /> {b.period.toLowerCase()} · {scope}
          {part}
        </h3>
        <span class={b.hard ? 'badge hard' : 'badge'}>{b.hard ? 'hard: refuses' : 'soft: alerts only'}</span>
      </header>
      {b.scope === 'EACH_USER' && (
        <p class="hint">Bar: the user nearest the limit{b.user ? ` (${b.user})` : ' (none yet)'}.</p>
      )}
      <div
        class={`bar ${Number(b.percentUsed) >= 100 ? 'level-over' : Number(b.percentUsed) >= 80 ? 'level-warn' : ''}`}
        role="img"
        aria-label={`${b.percentUsed} % used`}
        data-level={Number(b.percentUsed) >= 100 ? 'over' : Number(b.percentUsed) >= 80 ? 'warn' : 'ok'}
      >
        <span class="spent" style={{ width: `${share(b.spent, b.limit)}%` }} />
        <span class="held" style={{ width: `${Math.min(share(b.held, b.limit), 100 - share(b.spent, b.limit))}%` }} />
        {b.thresholds.map((t) => (
          <i class="mark" style={{ left: `${Math.min(t, 100)}%` }} title={`${t} %`} />
        ))}
      </div>
      <dl class="figures">
        <dt>Used</dt>
        <dd data-testid="percent">{b.percentUsed} %</dd>
        <dt>Spent</dt>
        <dd data-amount={b.spent}>
          <Amount amount={b.spent} unit={b.unit} />
        </dd>
        <dt>Held</dt>
        <dd data-amount={b.held}>
          <Amount amount={b.held} unit={b.unit} />
          {b.heldUnderReview !== '0' && (
            <span class="badge hard" data-testid="under-review">
              {' '}
              <Amount amount={b.heldUnderReview} unit={b.unit} /> under review
            </span>
          )}
        </dd>
        <dt>Remaining</dt>
        <dd data-amount={b.remaining} data-testid="remaining">
          <Amount amount={b.remaining} unit={b.unit} />
        </dd>
        <dt>Forecast at period end</dt>
        <dd data-testid="forecast">
          {b.forecastSpend === null ? 'not enough history yet' : <Amount amount={b.forecastSpend} unit={b.unit} />}
          {b.runsOutAt && <span class="badge hard"> runs out {dateTime(b.runsOutAt).slice(0, 16)}</span>}
        </dd>
        <dt>Window</dt>
        <dd>
          {dateTime(b.periodStart)} → {b.period === 'LIFETIME' ? 'no end' : dateTime(b.periodEnd)}
        </dd>
        <dt>Thresholds</dt>
        <dd>{b.thresholds.length ? b.thresholds.map((t) => `${t} %`).join(', ') : 'none'}</dd>
      </dl>
      <div class="events" data-testid="refusals">
        <h4>Recent refusals and thresholds</h4>
        {b.events.length === 0 ? (
          <p class="none">None in this window.</p>
        ) : (
          <ul>
            {b.events.map((e) => (
              <li class={e.kind === 'REFUSED' ? 'refused' : ''}>
                {dateTime(e.at)}: {e.kind === 'REFUSED' ? 'refused a submission' : `crossed ${e.threshold} %`}
                {e.user ? ` (user ${e.user})` : ''}
              </li>
            ))}
          </ul>
        )}
        {refusals.length > 0 && (
          <p class="hint">
            A refusal is recorded once per window{b.scope === 'EACH_USER' ? ' and user' : ''}; later ones answer 402 the
            same way.
          </p>
        )}
      </div>
      {manage && <ChangeBudget budget={b} onDone={onChanged} />}
      {b.scope === 'EACH_USER' && b.users.edges.length > 0 && (
        <table class="users">
          <thead>
            <tr>
              <th>End user</th>
              <th class="num">Spent</th>
              <th class="num">Held</th>
              <th class="num">Remaining</th>
            </tr>
          </thead>
          <tbody>
            {b.users.edges.map(({ node: u }) => (
              <tr>
                <td>{u.user}</td>
                <td class="num">
                  <Amount amount={u.spent} unit={b.unit} />
                </td>
                <td class="num">
                  <Amount amount={u.held} unit={b.unit} />
                </td>
                <td class="num">
                  <Amount amount={u.remaining} unit={b.unit} />
                </td>
              </tr>
            ))}
          </tbody>
          {b.users.pageInfo.hasNextPage && (
            <caption>first 20 users by id; the API pages through all (budgetStatus → users)</caption>
          )}
        </table>
      )}
    </article>
  );
}
