/**
 * People and service accounts (owners): invite by email with a role on every project or named
 * ones, change a role, disable someone (their tokens and sessions stop at once); service accounts
 * for dashboards and scripts, with their tokens (each secret shown once).
 */
import { useClient, useQuery } from '@urql/preact';
import type { CombinedError } from '@urql/core';
import { useState } from 'preact/hooks';
import { errorText } from '../api';
import { dateTime } from '../format';
import { NewSecret } from '../parts/new-secret';
import { projectName, useProjects } from '../parts/project-picker';
import { TokenTable, type TokenRow } from './tokens';

const ROLES = ['OWNER', 'FINANCE', 'LEAD', 'VIEWER'] as const;
type Role = (typeof ROLES)[number];

interface Grant {
  role: Role;
  allProjects: boolean;
  projectIds: string[];
}
interface PersonRow extends Grant {
  id: string;
  email: string;
  displayName: string | null;
  state: string;
  signsInWith: string | null;
  lastSignInAt: string | null;
}
interface ServiceRow extends Grant {
  id: string;
  name: string;
  createdAt: string;
  disabledAt: string | null;
}

const PEOPLE = `query People {
  people { id email displayName role allProjects projectIds state signsInWith lastSignInAt }
  serviceAccounts { id name role allProjects projectIds createdAt disabledAt }
  tokens(all: true) { id prefix name holder createdAt expiresAt lastUsedAt revokedAt }
}`;
const INVITE = `mutation Invite($email: String!, $role: Role!, $projectIds: [ID!]) { invitePerson(email: $email, role: $role, projectIds: $projectIds) { id } }`;
const SET_ROLE = `mutation SetRole($id: ID!, $role: Role!, $projectIds: [ID!]) { setRole(personId: $id, role: $role, projectIds: $projectIds) { id } }`;
const DISABLE = `mutation Disable($id: ID!) { disablePerson(personId: $id) { id } }`;
const NEW_SERVICE = `mutation NewService($name: String!, $role: Role!, $projectIds: [ID!]) { createServiceAccount(name: $name, role: $role, projectIds: $projectIds) { id } }`;
const SERVICE_TOKEN = `mutation ServiceToken($id: ID, $name: String!) { createToken(name: $name, serviceAccountId: $id) { secret } }`;
const REVOKE = `mutation RevokeToken($id: ID!) { revokeToken(tokenId: $id) }`;

export function People() {
  const [{ data, error }, reload] = useQuery<{
    people: PersonRow[];
    serviceAccounts: ServiceRow[];
    tokens: TokenRow[];
  }>({ query: PEOPLE });
  const client = useClient();
  const [failure, setFailure] = useState<CombinedError | undefined>();
  const [secret, setSecret] = useState('');
  const projects = useProjects();
  const refresh = () => reload({ requestPolicy: 'network-only' });
  const run = async (query: string, variables: Record<string, unknown>) => {
    const done = await client.mutation(query, variables).toPromise();
    setFailure(done.error);
    if (!done.error) refresh();
    return done;
  };
  if (error)
    return (
      <p class="error" role="alert">
        {errorText(error)}
      </p>
    );
  if (!data) return <p class="loading">Loading…</p>;
  const grantText = (g: Grant) =>
    g.allProjects
      ? 'every project'
      : g.projectIds.length
        ? g.projectIds.map((id) => projectName(projects, id)).join(', ')
        : 'no project yet';
  const serviceTokens = data.tokens.filter((t) => data.serviceAccounts.some((s) => s.name === t.holder));
  return (
    <section data-ready="people">
      <h1>People</h1>
      {failure && (
        <p class="error" role="alert">
          {errorText(failure)}
        </p>
      )}
      <GrantForm
        title="Invite a person"
        nameLabel="Email"
        nameField="email"
        projects={projects}
        onSubmit={(email, grant) =>
          run(INVITE, { email, role: grant.role, projectIds: grant.allProjects ? null : grant.projectIds })
        }
      />
      <table data-testid="people">
        <thead>
          <tr>
            <th>Email</th>
            <th>Role</th>
            <th>On</th>
            <th>State</th>
            <th>Last sign-in</th>
            <th>Change</th>
          </tr>
        </thead>
        <tbody>
          {data.people.map((p) => (
            <tr data-email={p.email}>
              <td>
                {p.email}
                {p.displayName ? <span class="hint"> {p.displayName}</span> : null}
              </td>
              <td>{p.role.toLowerCase()}</td>
              <td>{grantText(p)}</td>
              <td>{p.state}</td>
              <td>{p.lastSignInAt ? dateTime(p.lastSignInAt) : 'never'}</td>
              <td>
                {p.state !== 'disabled' && (
                  <>
                    <select
                      name="role"
                      aria-label={`role of ${p.email}`}
                      value={p.role}
                      onChange={(e) =>
                        void run(SET_ROLE, {
                          id: p.id,
                          role: (e.target as HTMLSelectElement).value,
                          projectIds: p.allProjects ? null : p.projectIds,
                        })
                      }
                    >
                      {ROLES.map((r) => (
                        <option value={r}>{r.toLowerCase()}</option>
                      ))}
                    </select>{' '}
                    <button
                      type="button"
                      class="link"
                      onClick={() =>
                        confirm(`Disable ${p.email}? Their tokens and sessions stop at once.`) &&
                        void run(DISABLE, { id: p.id })
                      }
                    >
                      disable
                    </button>
                  </>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>

      <h2>Service accounts</h2>
      <GrantForm
        title="New service account"
        nameLabel="Name"
        nameField="serviceName"
        projects={projects}
        onSubmit={(name, grant) =>
          run(NEW_SERVICE, { name, role: grant.role, projectIds: grant.allProjects ? null : grant.projectIds })
        }
      />
      {secret && <NewSecret secret={secret} what="service account token" onDone={() => setSecret('')} />}
      <table data-testid="service-accounts">
        <thead>
          <tr>
            <th>Name</th>
            <th>Role</th>
            <th>On</th>
            <th>Created</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {data.serviceAccounts.map((s) => (
            <tr>
              <td>{s.name}</td>
              <td>{s.role.toLowerCase()}</td>
              <td>{grantText(s)}</td>
              <td>{dateTime(s.createdAt)}</td>
              <td>
                <button
                  type="button"
                  class="link"
                  onClick={async () => {
                    const done = await run(SERVICE_TOKEN, {
                      id: s.id,
                      name: `${s.name} ${new Date().toISOString().slice(0, 10)}`,
                    });
                    if (done.data) setSecret((done.data as { createToken: { secret: string } }).createToken.secret);
                  }}
                >
                  new token
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {serviceTokens.length > 0 && (
        <TokenTable tokens={serviceTokens} showHolder onRevoke={(id) => void run(REVOKE, { id })} />
      )}
    </section>
  );
}

function GrantForm({
  title,
  nameLabel,
  nameField,
  projects,
  onSubmit,
}: {
  title: string;
  nameLabel: string;
  nameField: string;
  projects: { id: string; name: string }[];
  onSubmit(name: string, grant: Grant): Promise<{ error?: unknown }>;
}) {
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>('VIEWER');
  const [picked, setPicked] = useState<string[]>([]);
  const all = role === 'OWNER' || picked.length === 0;
  return (
    <form
      class="card inline-form"
      aria-label={title}
      onSubmit={async (e) => {
        e.preventDefault();
        const done = await onSubmit(name.trim(), { role, allProjects: all, projectIds: picked });
        if (!done.error) {
          setName('');
          setPicked([]);
        }
      }}
    >
      <h2>{title}</h2>
      <label>
        {nameLabel}{' '}
        <input name={nameField} required value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
      </label>
      <label>
        Role{' '}
        <select
          name={`${nameField}Role`}
          value={role}
          onChange={(e) => setRole((e.target as HTMLSelectElement).value as Role)}
        >
          {ROLES.map((r) => (
            <option value={r}>{r.toLowerCase()}</option>
          ))}
        </select>
      </label>
      {role !== 'OWNER' && projects.length > 0 && (
        <fieldset>
          <legend>On projects (none ticked: every project)</legend>
          {projects.map((p) => (
            <label class="check">
              <input
                type="checkbox"
                name={`${nameField}Project`}
                value={p.id}
                checked={picked.includes(p.id)}
                onChange={(e) =>
                  setPicked(
                    (e.target as HTMLInputElement).checked ? [...picked, p.id] : picked.filter((x) => x !== p.id),
                  )
                }
              />{' '}
              {p.name}
            </label>
          ))}
        </fieldset>
      )}
      <button type="submit" disabled={!name.trim()}>
        {title.startsWith('Invite') ? 'Invite' : 'Create'}
      </button>
    </form>
  );
}
