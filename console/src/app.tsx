/**
 * The console's shell: sign-in, the caller (viewer), navigation by the URL's hash (#/budgets…),
 * and the project being looked at. Pages read the API through urql. It shows only the pages and
 * actions the caller's role allows (viewer.pages, viewer.can); the API decides again on each call.
 */
import { Provider } from '@urql/preact';
import type { Client } from '@urql/core';
import { useMemo, useRef, useState } from 'preact/hooks';
import { useRoute } from './route';
import { apiClient } from './api';
import { session, type SessionState } from './session';
import { SignedIn, useSigned, type Signed } from './signed';
import { SignIn } from './pages/sign-in';
import type { Viewer } from './viewer';
import { Overview } from './pages/overview';
import { lazy } from './lazy';

const Budgets = lazy(() => import('./pages/budgets').then((m) => m.Budgets));
const Tasks = lazy(() => import('./pages/tasks').then((m) => m.Tasks));
const TaskDetail = lazy(() => import('./pages/task-detail').then((m) => m.TaskDetail));
const PriceBook = lazy(() => import('./pages/price-book').then((m) => m.PriceBook));
const Alerts = lazy(() => import('./pages/alerts').then((m) => m.Alerts));
const People = lazy(() => import('./pages/people').then((m) => m.People));
const Tokens = lazy(() => import('./pages/tokens').then((m) => m.Tokens));
const Audit = lazy(() => import('./pages/audit').then((m) => m.Audit));
const Months = lazy(() => import('./pages/months').then((m) => m.Months));
const Reconciliation = lazy(() => import('./pages/reconciliation').then((m) => m.Reconciliation));
import { ProjectPicker } from './parts/project-picker';
import { ReviewCount } from './parts/review-count';

const PAGES = [
  { path: 'overview', title: 'Overview' },
  { path: 'budgets', title: 'Budgets' },
  { path: 'tasks', title: 'Tasks' },
  { path: 'review', title: 'Review queue' },
  { path: 'prices', title: 'Price book' },
  { path: 'alerts', title: 'Alerts' },
  { path: 'months', title: 'Months' },
  { path: 'reconciliation', title: 'Reconciliation' },
  { path: 'people', title: 'People' },
  { path: 'tokens', title: 'Tokens' },
  { path: 'audit', title: 'Audit' },
];

/** Who is signed in, in a few words. */
function who(viewer: Viewer): string {
  if (viewer.kind === 'ADMIN_TOKEN') return 'admin';
  if (viewer.kind === 'PROJECT_KEY') return `project ${viewer.projectName ?? viewer.projectId} · read-only`;
  const scope = viewer.allProjects
    ? ''
    : ` of ${viewer.projectIds.length} project${viewer.projectIds.length === 1 ? '' : 's'}`;
  return `${viewer.name ?? ''} · ${(viewer.role ?? '').toLowerCase()}${scope}`;
}

/**
 * `opened`: the session as this page load found it (main.tsx), used once: after a sign-out the
 * sign-in page asks again. `client`: the API client that load's first queries went out on.
 */
export function App({ opened, client: given }: { opened?: SessionState; client?: Client }) {
  const [viewer, setViewer] = useState<Viewer | null>((opened?.signedIn && opened.viewer) || null);
  const first = useRef(opened);
  const [picked, setPicked] = useState<string | null>(null);
  const client = useMemo<Client>(() => given ?? apiClient(), []);

  const signOut = async () => {
    await session.signOut();
    first.current = undefined;
    setViewer(null);
    setPicked(null);
  };
  if (!viewer) return <SignIn opened={first.current} onSignedIn={setViewer} />;
  const signed: Signed = {
    viewer,
    projectId: viewer.kind === 'PROJECT_KEY' ? viewer.projectId : picked,
    pickProject: setPicked,
  };
  return (
    <Provider value={client}>
      <SignedIn.Provider value={signed}>
        <Shell onSignOut={() => void signOut()} />
      </SignedIn.Provider>
    </Provider>
  );
}

function Shell({ onSignOut }: { onSignOut(): void }) {
  const { viewer } = useSigned();
  const { page, arg } = useRoute();
  return (
    <div class="shell">
      <header class="top">
        <a class="brand" href="#/overview">
          spendgate
        </a>
        <nav>
          {PAGES.filter((p) => viewer.pages.includes(p.path)).map((p) => (
            <a
              href={`#/${p.path}`}
              class={page === p.path ? 'active' : ''}
              aria-current={page === p.path ? 'page' : undefined}
            >
              {p.title}
              {p.path === 'review' && <ReviewCount />}
            </a>
          ))}
        </nav>
        <div class="who">
          <span data-testid="viewer">{who(viewer)}</span>
          <ProjectPicker />
          <button type="button" class="link" onClick={onSignOut}>
            Sign out
          </button>
        </div>
      </header>
      <main>
        {page === 'overview' && <Overview />}
        {page === 'budgets' && <Budgets />}
        {page === 'tasks' && !arg && <Tasks review={false} />}
        {page === 'tasks' && arg && <TaskDetail taskId={arg} />}
        {page === 'review' && <Tasks review={true} />}
        {page === 'prices' && <PriceBook />}
        {page === 'alerts' && <Alerts />}
        {page === 'months' && viewer.pages.includes('months') && <Months />}
        {page === 'reconciliation' && viewer.pages.includes('reconciliation') && <Reconciliation />}
        {page === 'people' && viewer.pages.includes('people') && <People />}
        {page === 'tokens' && viewer.pages.includes('tokens') && <Tokens />}
        {page === 'audit' && viewer.pages.includes('audit') && <Audit />}
        {!PAGES.some((p) => p.path === page) && (
          <p class="empty">
            No such page. Start from the <a href="#/overview">overview</a>.
          </p>
        )}
        {PAGES.some((p) => p.path === page) && !viewer.pages.includes(page) && (
          <p class="empty" data-testid="not-allowed">
            Your role does not include this page. Start from the <a href="#/overview">overview</a>.
          </p>
        )}
      </main>
    </div>
  );
}
