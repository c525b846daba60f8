/**
 * Tokens: the signed-in person's own access tokens (for the API, the CLI and signing in without
 * the identity provider). Created with a name and an optional expiry; the secret is shown once,
 * here, and never again; revoking one stops it at once on every instance.
 */
import { useMutation, useQuery } from '@urql/preact';
import { useState } from 'preact/hooks';
import { errorText } from '../api';
import { dateTime } from '../format';
import { Empty } from '../parts/empty';
import { NewSecret } from '../parts/new-secret';

export interface TokenRow {
  id: string;
  prefix: string;
  name: string;
  holder: string;
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

const TOKENS = `query Tokens { tokens { id prefix name holder createdAt expiresAt lastUsedAt revokedAt } }`;
const CREATE = `mutation CreateToken($name: String!, $expiresAt: DateTime) { createToken(name: $name, expiresAt: $expiresAt) { secret token { id } } }`;
const REVOKE = `mutation RevokeToken($id: ID!) { revokeToken(tokenId: $id) }`;

export function Tokens() {
  const [{ data, error }, reload] = useQuery<{ tokens: TokenRow[] }>({ query: TOKENS });
  const [created, create] = useMutation<{ createToken: { secret: string } }>(CREATE);
  const [revoked, revoke] = useMutation(REVOKE);
  const [name, setName] = useState('');
  const [expires, setExpires] = useState('');
  const [secret, setSecret] = useState('');
  const refresh = () => reload({ requestPolicy: 'network-only' });
  if (error) {
    return (
      <section data-ready="tokens">
        <h1>Your tokens</h1>
        <p class="error" role="alert">
          {errorText(error)}
        </p>
      </section>
    );
  }
  if (!data) return <p class="loading">Loading…</p>;
  return (
    <section data-ready="tokens">
      <h1>Your tokens</h1>
      <form
        class="card inline-form"
        onSubmit={async (e) => {
          e.preventDefault();
          const done = await create({
            name: name.trim(),
            expiresAt: expires ? new Date(`${expires}T00:00:00Z`).toISOString() : null,
          });
          if (done.data) {
            setSecret(done.data.createToken.secret);
            setName('');
            refresh();
          }
        }}
      >
        <label>
          Name{' '}
          <input
            name="tokenName"
            required
            maxLength={100}
            value={name}
            placeholder="laptop, grafana…"
            onInput={(e) => setName((e.target as HTMLInputElement).value)}
          />
        </label>
        <label>
          Expires (UTC day, optional){' '}
          <input
            name="tokenExpires"
            type="date"
            value={expires}
            onInput={(e) => setExpires((e.target as HTMLInputElement).value)}
          />
        </label>
        <button type="submit" disabled={created.fetching || !name.trim()}>
          Create token
        </button>
        {created.error && (
          <p class="error" role="alert">
            {errorText(created.error)}
          </p>
        )}
      </form>
      {secret && <NewSecret secret={secret} what="token" onDone={() => setSecret('')} />}
      {revoked.error && (
        <p class="error" role="alert">
          {errorText(revoked.error)}
        </p>
      )}
      {data.tokens.length === 0 ? (
        <Empty>No tokens yet. Create one above to use the API or the CLI as yourself.</Empty>
      ) : (
        <TokenTable tokens={data.tokens} onRevoke={async (id) => (await revoke({ id }), refresh())} />
      )}
    </section>
  );
}

export function TokenTable({
  tokens,
  onRevoke,
  showHolder,
}: {
  tokens: TokenRow[];
  onRevoke(id: string): void;
  showHolder?: boolean;
}) {
  return (
    <table data-testid="tokens">
      <thead>
        <tr>
          <th>Prefix</th>
          <th>Name</th>
          {showHolder && <th>Holder</th>}
          <th>Created (UTC)</th>
          <th>Last used</th>
          <th>Expires</th>
          <th>State</th>
        </tr>
      </thead>
      <tbody>
        {tokens.map((t) => (
          <tr>
            <td>
              <code>{t.prefix}</code>
            </td>
            <td>{t.name}</td>
            {showHolder && <td>{t.holder}</td>}
            <td>{dateTime(t.createdAt)}</td>
            <td>{t.lastUsedAt ? dateTime(t.lastUsedAt) : 'never'}</td>
            <td>{t.expiresAt ? dateTime(t.expiresAt) : 'never'}</td>
            <td>
              {t.revokedAt ? (
                `revoked ${dateTime(t.revokedAt)}`
              ) : (
                <button
                  type="button"
                  class="link"
                  onClick={() => confirm(`Revoke ${t.name}? Whatever uses it stops at once.`) && onRevoke(t.id)}
                >
                  revoke
                </button>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
