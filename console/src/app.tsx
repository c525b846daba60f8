/**
 * The console's shell: sign-in, the caller (viewer), navigation by the URL's hash (#/budgets…),
 * and the project being looked at. Pages read the API through urql.
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
import { ProjectPicker } from './parts/project-picker';

export interface Signed {
  viewer: Viewer;
  /** The project the pages show: a project key's own; for the admin, the one picked (null: all). */
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
];

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
  const [token, setToken] = useState(session.token());
  const [viewer, setViewer] = useState<Viewer | null>(null);
  const [picked, setPicked] = useState<string | null>(null);
  const client = useMemo<Client | null>(() => (token ? apiClient(token) : null), [token]);

  const signOut = () => {
    session.clear();
    setToken(null);
    setViewer(null);
    setPicked(null);
  };
  if (!client || !viewer) {
    return (
      <SignIn
        token={token}
        onSignedIn={(t, v) => {
          session.keep(t);
          setToken(t);
          setViewer(v);
        }}
        onForget={signOut}
      />
    );
  }
  const signed: Signed = { viewer, projectId: viewer.admin ? picked : viewer.projectId, pickProject: setPicked };
  return (
    <Provider value={client}>
      <SignedIn.Provider value={signed}>
        <Shell onSignOut={signOut} />
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
          {PAGES.map((p) => (
            <a href={`#/${p.path}`} class={page === p.path ? 'active' : ''} aria-current={page === p.path ? 'page' : undefined}>
              {p.title}
            </a>
          ))}
        </nav>
        <div class="who">
          <span data-testid="viewer">{viewer.admin ? 'admin' : `project ${viewer.projectName ?? viewer.projectId} · read-only`}</span>
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
        {!PAGES.some((p) => p.path === page) && <p class="empty">No such page. Start from the <a href="#/overview">overview</a>.</p>}
      </main>
    </div>
  );
}
