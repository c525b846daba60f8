/**
 * Sign-in with the admin token or a project API key. The token is checked against the API
 * (`viewer`) before it is kept, and only in this tab's sessionStorage (session.ts).
 */
import { useEffect, useState } from 'preact/hooks';
import { apiClient, errorText } from '../api';

export interface Viewer {
  admin: boolean;
  projectId: string | null;
  projectName: string | null;
}

const VIEWER = `query Viewer { viewer { admin projectId projectName } }`;

/** Who the token is, asked through the same GraphQL client as every page; the API's refusal if it is nobody. */
async function viewerOf(token: string): Promise<Viewer> {
  const result = await apiClient(token).query<{ viewer: Viewer }>(VIEWER, {}, { requestPolicy: 'network-only' }).toPromise();
  if (result.data?.viewer) return result.data.viewer;
  throw new Error(errorText(result.error) || 'the gateway gave no answer');
}

export function SignIn({ token, onSignedIn, onForget }: { token: string | null; onSignedIn(token: string, viewer: Viewer): void; onForget(): void }) {
  const [typed, setTyped] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);

  const tryToken = async (t: string) => {
    setBusy(true);
    setError('');
    try {
      onSignedIn(t, await viewerOf(t));
    } catch (e) {
      setError((e as Error).message);
      onForget();
    } finally {
      setBusy(false);
    }
  };
  // A token kept in this tab (a reload): check it again.
  useEffect(() => {
    if (token) void tryToken(token);
  }, []);

  return (
    <div class="sign-in">
      <h1>spendgate console</h1>
      <p>Spend, budgets and the review queue of this gateway.</p>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (typed.trim()) void tryToken(typed.trim());
        }}
      >
        <label>
          Admin token or project API key
          <input
            name="token"
            type="password"
            autocomplete="off"
            value={typed}
            onInput={(e) => setTyped((e.target as HTMLInputElement).value)}
            placeholder="sga_… or sg_…"
          />
        </label>
        <button type="submit" disabled={busy}>
          {busy ? 'Checking…' : 'Sign in'}
        </button>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </form>
      <p class="hint">
        The admin token is printed by <code>npm start</code> (sandbox) or set as <code>ADMIN_TOKEN</code>. A project key (from{' '}
        <code>npm run cli -- key create --project my-team</code>) shows its own project, read-only. The token stays in this tab only.
      </p>
    </div>
  );
}
