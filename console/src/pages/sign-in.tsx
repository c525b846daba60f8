/**
 * Sign-in: with the organisation's identity provider when the gateway offers it (GET /auth/login),
 * or with a token posted once to /auth/token (a person's access token, the ADMIN_TOKEN as
 * break-glass, or a project key for its own project). Either way the session is a server-side
 * row behind an HttpOnly cookie; this page never keeps a token.
 */
import { useEffect, useState } from 'preact/hooks';
import { apiClient, errorText } from '../api';
import { session, type SessionState } from '../session';
import type { Viewer } from '../viewer';

const VIEWER = `query Viewer { viewer { kind admin role allProjects projectIds name email can pages projectId projectName } }`;

/** Who the session is, asked through the same GraphQL client as every page; the API's refusal if it is nobody. */
async function viewerOfSession(): Promise<Viewer> {
  const result = await apiClient().query<{ viewer: Viewer }>(VIEWER, {}, { requestPolicy: 'network-only' }).toPromise();
  if (result.data?.viewer) return result.data.viewer;
  throw new Error(errorText(result.error) || 'the gateway gave no answer');
}

export function SignIn({
  opened,
  onSignedIn,
}: {
  opened?: SessionState | undefined;
  onSignedIn(viewer: Viewer): void;
}) {
  const [typed, setTyped] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(true);
  const [oidc, setOidc] = useState(false);

  // A session already there (a reload, or back from the identity provider): straight in.
  useEffect(() => {
    void (async () => {
      try {
        const state = opened ?? (await session.state());
        setOidc(state.oidc);
        if (state.signedIn) onSignedIn(state.viewer ?? (await viewerOfSession()));
      } catch (e) {
        setError((e as Error).message);
      } finally {
        setBusy(false);
      }
    })();
  }, []);

  const tryToken = async (token: string) => {
    setBusy(true);
    setError('');
    try {
      await session.signIn(token);
      setTyped('');
      onSignedIn(await viewerOfSession());
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="sign-in">
      <h1>spendgate console</h1>
      <p>Spend, budgets and the review queue of this gateway.</p>
      {oidc && (
        <p>
          <a class="button" href="/auth/login" data-testid="sign-in-oidc">
            Sign in with your organisation
          </a>
        </p>
      )}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (typed.trim()) void tryToken(typed.trim());
        }}
      >
        <label>
          {oidc ? 'Or with a token' : 'Access token'}
          <input
            name="token"
            type="password"
            autocomplete="off"
            value={typed}
            onInput={(e) => setTyped((e.target as HTMLInputElement).value)}
            placeholder="sgp_… (yours), sg_… (a project key) or the ADMIN_TOKEN"
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
        An owner gives you a personal access token (
        <code>npm run cli -- token create --name laptop --email you@example.com</code>); a project key shows its own
        project, read-only; the ADMIN_TOKEN is for emergencies and every use is audited. The session ends when you sign
        out.
      </p>
    </div>
  );
}
