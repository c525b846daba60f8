/**
 * The console's session lives on the server (decisions §11): signing in (with the organisation's
 * identity provider, or a token posted once to /auth/token) sets an HttpOnly cookie this code
 * never sees. What the page keeps is the CSRF token every request must carry (x-csrf-token), in
 * memory only: never in a URL, storage or a cookie it can read. A reload asks /auth/session again.
 */
import type { Viewer } from './viewer';

export interface SessionState {
  signedIn: boolean;
  /** Sign-in with the organisation's identity provider is offered (OIDC_ISSUER is set). */
  oidc: boolean;
  csrfToken: string;
  /** Who is signed in (GraphQL's `viewer`), when signedIn: no second round trip before the first page. */
  viewer?: Viewer;
}

let csrf = '';

export const session = {
  csrf: (): string => csrf,

  async state(): Promise<SessionState> {
    const answer = (await call('/auth/session', 'GET')) as SessionState;
    csrf = answer.csrfToken;
    return answer;
  },

  /** Signs in with a token (a person's, the ADMIN_TOKEN, or a project key): the cookie follows. */
  async signIn(token: string): Promise<void> {
    const answer = (await call('/auth/token', 'POST', { token })) as { csrfToken: string };
    csrf = answer.csrfToken;
  },

  /** Ends the session on the server. */
  async signOut(): Promise<void> {
    await call('/auth/logout', 'POST', {}).catch(() => undefined);
    csrf = '';
  },
};

async function call(path: string, method: 'GET' | 'POST', body?: unknown): Promise<unknown> {
  const response = await fetch(path, {
    method,
    credentials: 'same-origin',
    headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...(csrf ? { 'x-csrf-token': csrf } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const answer = (await response.json().catch(() => ({}))) as { message?: string };
  if (!response.ok) throw new Error(answer.message ?? `the gateway answered ${response.status}`);
  return answer;
}
