/**
 * The console's shell: sign-in, the caller (viewer), navigation by the URL's hash (#/budgets…),
 * and the project being looked at. Pages read the API through urql. It shows only the pages and
 * actions the caller's role allows (viewer.pages, viewer.can); the API decides again on each call.
 */
import { Provider } from '@urql/preact';
import type { Client } from '@urql/core';
import { createContext } from 'preact';
import { useContext, useEffect, useMemo, useState } from 'preact/hooks';
import { apiClient } from './api';
import { session } from './session';
import { SignIn, type Viewer } from './pages/sign-in';
import { Overview } from './pages/overview';
import { Budgets } from './pages/budgets';
import { Tasks } from './pages/tasks';
import { TaskDetail } from './pages/task-detail';
import { PriceBook } from './pages/price-book';
import { Alerts } from './pages/alerts';
import { People } from './pages/people';
import { Tokens } from './pages/tokens';
import { Audit } from './pages/audit';
import { Months } from './pages/months';
import { Reconciliation } from './pages/reconciliation';
import { ProjectPicker } from './parts/project-picker';

export interface Signed {
  viewer: Viewer;
  /** The project the pages show: a project key's own; for anyone else, the one picked (null: all they may see). */
  projectId: string | null;
  pickProject(id: string | null): void;
}

export const SignedIn = createContext<Signed>(null as unknown as Signed);
export const useSigned = () => useContext(SignedIn);

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

/** Whether the caller holds a capability on some project (the API checks the project itself). */
export const may = (viewer: Viewer, capability: string): boolean => viewer.can.includes(capability);

/** Who is signed in, in a few words. */
function who(viewer: Viewer): string {
  if (viewer.kind === 'ADMIN_TOKEN') return 'admin';
  if (viewer.kind === 'PROJECT_KEY') return `project ${viewer.projectName ?? viewer.projectId} · read-only`;
  const scope = viewer.allProjects ? '' : ` of ${viewer.projectIds.length} project${viewer.projectIds.length === 1 ? '' : 's'}`;
  return `${viewer.name ?? ''} · ${(viewer.role ?? '').toLowerCase()}${scope}`;
}

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash.replace(/^#\/?/, '');
}

export function App() {
  const [viewer, setViewer] = useState<Viewer | null>(null);
  const [picked, setPicked] = useState<string | null>(null);
  const client = useMemo<Client>(() => apiClient(), []);

  const signOut = async () => {
    await session.signOut();
    setViewer(null);
    setPicked(null);
  };
  if (!viewer) return <SignIn onSignedIn={setViewer} />;
  const signed: Signed = { viewer, projectId: viewer.kind === 'PROJECT_KEY' ? viewer.projectId : picked, pickProject: setPicked };
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
  const route = useHash();
  const [first, arg] = route.split('/');
  const page = first || 'overview';
  return (
    <div class="shell">
      <header class="top">
        <a class="brand" href="#/overview">spendgate</a>
        <nav>
          {PAGES.filter((p) => viewer.pages.includes(p.path)).map((p) => (
            <a href={`#/${p.path}`} class={page === p.path ? 'active' : ''} aria-current={page === p.path ? 'page' : undefined}>
              {p.title}
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
        {page === 'tasks' && arg && <TaskDetail taskId={decodeURIComponent(arg)} />}
        {page === 'review' && <Tasks review={true} />}
        {page === 'prices' && <PriceBook />}
        {page === 'alerts' && <Alerts />}
        {page === 'months' && viewer.pages.includes('months') && <Months />}
        {page === 'reconciliation' && viewer.pages.includes('reconciliation') && <Reconciliation />}
        {page === 'people' && viewer.pages.includes('people') && <People />}
        {page === 'tokens' && viewer.pages.includes('tokens') && <Tokens />}
        {page === 'audit' && viewer.pages.includes('audit') && <Audit />}
        {!PAGES.some((p) => p.path === page) && <p class="empty">No such page. Start from the <a href="#/overview">overview</a>.</p>}
        {PAGES.some((p) => p.path === page) && !viewer.pages.includes(page) && (
          <p class="empty" data-testid="not-allowed">
            Your role does not include this page. Start from the <a href="#/overview">overview</a>.
          </p>
        )}
      </main>
    </div>
  );
}
