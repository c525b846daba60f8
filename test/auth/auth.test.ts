/**
 * Signing in (decisions §11): console sessions and CSRF, a disabled person stopped on two instances, failed
 * authentication slowed per address (vendor paths too, good keys never), API keys with names,
 * expiry and rotation, and no secret in a log line, an error or the audit trail. Real gateways
 * on real PostgreSQL, spoken to over HTTP.
 */
import type { Gateway } from '../../src/bootstrap.js';
import { PeopleService } from '../../src/people/people.service.js';
import { TokensService } from '../../src/people/tokens.service.js';
import { CookieJar } from '../support/cookie-jar.js';
import {
  ADMIN,
  eventually,
  freshDatabase,
  gateway,
  graphql,
  http,
  projectWithKey,
  spawnGateway,
  sql,
  submitGeneration,
} from '../support/harness.js';

const IMAGE = { model: 'seedream-4.0', prompt: 'a red fox', resolution: '2K' };

async function person(
  gw: Gateway,
  email: string,
  role: 'OWNER' | 'FINANCE' | 'LEAD' | 'VIEWER',
  projectIds: string[] | null = null,
) {
  const p = await gw.app.get(PeopleService).invite(email, { role, projectIds }, 'test');
  return { id: p.id, token: (await gw.app.get(TokensService).create({ personId: p.id }, 'laptop')).secret };
}

/** Signs in as the console does: POST /auth/token, then the CSRF token for later requests. */
async function consoleSignIn(gw: Gateway, token: string): Promise<{ jar: CookieJar; csrf: string; answer: Response }> {
  const jar = new CookieJar();
  const answer = await jar.fetch(`${gw.url}/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token }),
  });
  const body = (await answer.clone().json()) as { csrfToken?: string };
  return { jar, csrf: body.csrfToken ?? '', answer };
}

const cookieGraphql = async (gw: Gateway, jar: CookieJar, query: string, headers: Record<string, string> = {}) => {
  const res = await jar.fetch(`${gw.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query }),
  });
  return {
    status: res.status,
    body: (await res.json()) as {
      data?: Record<string, unknown>;
      errors?: Array<{ message: string; extensions?: { code?: string } }>;
      message?: string;
    },
  };
};

describe('one gateway', () => {
  let gw: Gateway;
  let project: { projectId: string; key: string };
  beforeAll(async () => {
    gw = await gateway(await freshDatabase());
    project = await projectWithKey(gw, 'search');
  });
  afterAll(() => gw.close());

  test('console sign-in: an HttpOnly SameSite=Strict session cookie; a cookie mutation needs the CSRF token and no foreign Origin; sign-out ends the session on the server', async () => {
    const owner = await person(gw, 'olga@example.com', 'OWNER');
    const { jar, csrf, answer } = await consoleSignIn(gw, owner.token);
    expect(answer.status).toBe(200);
    const cookie = jar.lastSetCookie.find((c) => c.startsWith('sg_session='))!;
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Strict/i);
    expect(cookie).toMatch(/Path=\//);
    expect(cookie).not.toMatch(/Secure/); // http://127.0.0.1; Secure when PUBLIC_URL is https
    expect(jar.get('sg_session')).not.toContain(owner.token);
    expect(csrf.length).toBeGreaterThan(10);

    const budgets = async () =>
      Number((await sql(gw, 'SELECT count(*)::int AS n FROM budget WHERE project_id = $1', [project.projectId]))[0]!.n);
    const mutation = `mutation { setBudget(projectId: "${project.projectId}", unit: USD, limit: "10", period: MONTHLY, hard: true) }`;
    // No CSRF token: refused, nothing written.
    const bare = await cookieGraphql(gw, jar, mutation);
    expect(bare.status).toBe(403);
    // In GraphQL's shape, with extensions { code, status } like every other refusal (decisions §5).
    expect(bare.body.errors?.[0]).toMatchObject({
      message: expect.stringMatching(/CSRF/),
      extensions: { code: 'FORBIDDEN', status: 403 },
    });
    // The CSRF token, from another origin: refused.
    const foreign = await cookieGraphql(gw, jar, mutation, { 'x-csrf-token': csrf, origin: 'https://evil.example' });
    expect(foreign.status).toBe(403);
    expect(JSON.stringify(foreign.body)).toMatch(/may not use the console's session/);
    // A wrong CSRF token: refused.
    expect((await cookieGraphql(gw, jar, mutation, { 'x-csrf-token': `${csrf}x` })).status).toBe(403);
    expect(await budgets()).toBe(0);
    // From the console itself: done, and attributed to the person.
    const done = await cookieGraphql(gw, jar, mutation, { 'x-csrf-token': csrf, origin: gw.url });
    expect(done.body.errors).toBeUndefined();
    expect(await budgets()).toBe(1);
    const [record] = await sql(
      gw,
      `SELECT actor, actor_kind FROM audit_record WHERE action = 'budget.set' ORDER BY seq DESC LIMIT 1`,
    );
    expect(record).toEqual({ actor: 'olga@example.com', actor_kind: 'person' });
    expect(
      (
        await sql(
          gw,
          `SELECT count(*)::int AS n FROM audit_record WHERE action = 'sign-in.token' AND actor = 'olga@example.com'`,
        )
      )[0]!.n,
    ).toBe(1);

    // The session says who is signed in: the same viewer GraphQL answers, so the console asks nothing more first.
    const sessionState = async () =>
      (await (await jar.fetch(`${gw.url}/auth/session`)).json()) as { signedIn: boolean; viewer?: unknown };
    const viewer = await cookieGraphql(
      gw,
      jar,
      '{ viewer { kind admin role allProjects projectIds name email can pages projectId projectName } }',
      { 'x-csrf-token': csrf, origin: gw.url },
    );
    expect(await sessionState()).toMatchObject({ signedIn: true, viewer: viewer.body.data!.viewer });
    expect(viewer.body.data!.viewer).toMatchObject({ kind: 'PERSON', email: 'olga@example.com', role: 'OWNER' });

    // Sign-out needs the same proof, ends the row, and the cookie is worth nothing after.
    const session = jar.get('sg_session')!;
    expect((await jar.fetch(`${gw.url}/auth/logout`, { method: 'POST' })).status).toBe(403);
    expect(
      (await jar.fetch(`${gw.url}/auth/logout`, { method: 'POST', headers: { 'x-csrf-token': csrf } })).status,
    ).toBe(200);
    expect(jar.get('sg_session')).toBeUndefined();
    expect((await sql(gw, 'SELECT count(*)::int AS n FROM session WHERE ended_at IS NOT NULL'))[0]!.n).toBe(1);
    const signedOut = await sessionState();
    expect(signedOut.signedIn).toBe(false);
    expect(signedOut).not.toHaveProperty('viewer');
    const replayed = new CookieJar();
    replayed.take(
      new Response(null, {
        headers: [
          ['set-cookie', `sg_session=${session}`],
          ['set-cookie', `sg_csrf=${jar.get('sg_csrf')}`],
        ],
      }),
    );
    const after = await cookieGraphql(gw, replayed, '{ viewer { email } }', { 'x-csrf-token': csrf });
    expect(after.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    expect(after.body.errors?.[0]?.message).toMatch(/session has ended/);
  });

  test('a bad token at sign-in is refused in the one error shape and audited by its kind and prefix only', async () => {
    const { answer } = await consoleSignIn(gw, 'sgp_0123456789ab_not-the-real-secret-not-the-real-secr');
    expect(answer.status).toBe(401);
    const body = (await answer.json()) as { code: number; message: string };
    expect(body).toEqual({ code: 4010, message: expect.stringMatching(/not a valid token or key/) });
    const [record] = await sql(
      gw,
      `SELECT actor, action FROM audit_record WHERE action = 'sign-in.failed' ORDER BY seq DESC LIMIT 1`,
    );
    expect(record).toEqual({ actor: 'sgp_0123456789ab_…', action: 'sign-in.failed' });
    expect(JSON.stringify(await sql(gw, 'SELECT * FROM audit_record'))).not.toContain('not-the-real-secret');
  });

  test('API keys: a name and who issued it, last used, an expiry, and rotation with an overlap for the old secret', async () => {
    const lead = await person(gw, 'lena@example.com', 'LEAD', [project.projectId]);
    const issued = await graphql(
      gw,
      lead.token,
      `
        mutation ($p: ID!) {
          issueApiKey(projectId: $p, name: "batch jobs")
        }
      `,
      { p: project.projectId },
    );
    const key = issued.body.data.issueApiKey as string;
    const prefix = key.slice(3, 15);
    expect((await submitGeneration(gw, key, IMAGE)).status).toBe(200);
    const keys = async () =>
      (
        (
          await graphql(
            gw,
            ADMIN,
            '{ projects { id apiKeys { prefix name createdBy lastUsedAt expiresAt revokedAt } } }',
          )
        ).body.data.projects as unknown as Array<{ id: string; apiKeys: Array<Record<string, string | null>> }>
      )
        .find((p) => p.id === project.projectId)!
        .apiKeys.find((k) => k.prefix === prefix)!;
    expect(await keys()).toMatchObject({
      name: 'batch jobs',
      createdBy: 'lena@example.com',
      expiresAt: null,
      revokedAt: null,
    });
    expect((await keys()).lastUsedAt).not.toBeNull();

    // Rotation: a new secret for the same prefix; the old one works for the overlap, then not.
    const rotated = (
      await graphql(
        gw,
        lead.token,
        `
          mutation ($k: String!) {
            rotateApiKey(prefix: $k, overlapSeconds: 2)
          }
        `,
        { k: prefix },
      )
    ).body.data.rotateApiKey as string;
    expect(rotated.slice(3, 15)).toBe(prefix);
    expect(rotated).not.toBe(key);
    expect((await submitGeneration(gw, rotated, IMAGE)).status).toBe(200);
    expect((await submitGeneration(gw, key, IMAGE)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 2_300));
    expect((await submitGeneration(gw, key, IMAGE)).status).toBe(401);
    expect((await submitGeneration(gw, rotated, IMAGE)).status).toBe(200);
    const audit = await sql(gw, `SELECT action, actor, after FROM audit_record WHERE target_id = $1 ORDER BY seq`, [
      prefix,
    ]);
    expect(audit.map((a) => [a.action, a.actor])).toEqual([
      ['api-key.issue', 'lena@example.com'],
      ['api-key.rotate', 'lena@example.com'],
    ]);
    expect(JSON.stringify(audit)).not.toContain(key.slice(16));
    expect(JSON.stringify(audit)).not.toContain(rotated.slice(16));

    // Expiry: a key past its expiry is refused like an unknown one; a past expiry is refused at issue.
    const soon = new Date(Date.now() + 1_500).toISOString();
    const short = (
      await graphql(
        gw,
        ADMIN,
        `
          mutation ($p: ID!, $e: DateTime) {
            issueApiKey(projectId: $p, name: "demo", expiresAt: $e)
          }
        `,
        { p: project.projectId, e: soon },
      )
    ).body.data.issueApiKey as string;
    expect((await submitGeneration(gw, short, IMAGE)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1_700));
    expect((await submitGeneration(gw, short, IMAGE)).status).toBe(401);
    const past = await graphql(
      gw,
      ADMIN,
      `
        mutation ($p: ID!) {
          issueApiKey(projectId: $p, expiresAt: "2020-01-01T00:00:00Z")
        }
      `,
      { p: project.projectId },
    );
    expect(past.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');

    // Reports name the key beside its prefix (once its tasks settled).
    const report = await eventually(async () => {
      const rows = (
        await graphql(
          gw,
          ADMIN,
          `
            {
              spendReport(from: "2026-01-01T00:00:00Z", to: "2030-01-01T00:00:00Z", groupBy: ["apiKey"]) {
                keys
                apiKeyName
                tasks
              }
            }
          `,
        )
      ).body.data.spendReport as Array<{ keys: string[]; tasks: number }>;
      return rows.find((r) => r.keys[0] === prefix && r.tasks === 4);
    });
    expect(report).toEqual({ keys: [prefix], apiKeyName: 'batch jobs', tasks: 4 });
    const csv = await http(
      `${gw.url}/reports/spend.csv?from=2026-01-01T00:00:00Z&to=2030-01-01T00:00:00Z&groupBy=apiKey`,
      { key: ADMIN },
    );
    expect(csv.text.split('\n')[0]).toMatch(/,api_key_name$/);
    expect(csv.text).toContain(`${prefix},USD,`);
    expect(csv.text).toMatch(new RegExp(`${prefix},USD,.*,batch jobs`));
  });
});

test('a disabled person is refused on both instances at their next request (within 1 s), token and session alike', async () => {
  const url = await freshDatabase();
  const one = await gateway(url);
  const two = await gateway(url);
  try {
    const owner = await person(one, 'owner@example.com', 'OWNER');
    const leaving = await person(one, 'leaving@example.com', 'FINANCE');
    const signed = await consoleSignIn(two, leaving.token);
    const asViewer = (gw: Gateway) => graphql(gw, leaving.token, '{ viewer { email } }');
    expect((await asViewer(one)).body.data.viewer.email).toBe('leaving@example.com');
    expect((await asViewer(two)).body.data.viewer.email).toBe('leaving@example.com');
    expect(
      (await cookieGraphql(two, signed.jar, '{ viewer { email } }', { 'x-csrf-token': signed.csrf })).body.data,
    ).toEqual({ viewer: { email: 'leaving@example.com' } });

    const disabled = await graphql(
      one,
      owner.token,
      `
        mutation ($id: ID!) {
          disablePerson(personId: $id) {
            state
          }
        }
      `,
      { id: leaving.id },
    );
    const at = Date.now();
    expect(disabled.body.data.disablePerson.state).toBe('disabled');
    const [a, b, c] = await Promise.all([
      asViewer(one),
      asViewer(two),
      cookieGraphql(two, signed.jar, '{ viewer { email } }', { 'x-csrf-token': signed.csrf }),
    ]);
    expect(Date.now() - at).toBeLessThan(1_000);
    for (const refused of [a.body, b.body, c.body])
      expect(refused.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    const [record] = await sql(one, `SELECT actor, before, after FROM audit_record WHERE action = 'person.disable'`);
    expect(record!.actor).toBe('owner@example.com');
    expect(JSON.parse(record!.before as string).state).toBe('active'); // signed in to the console once
    expect(JSON.parse(record!.after as string).state).toBe('disabled');
  } finally {
    await one.close();
    await two.close();
  }
});

test('failed authentication is slowed per address: 429 after the limit on the vendor path and GraphQL, good keys from the same address never', async () => {
  const gw = await gateway(await freshDatabase(), {
    AUTH_FAILURES_PER_MINUTE: '5',
    AUTH_BLOCK_SECONDS: '60',
    SIMULATOR_DELAY_MS: '600000',
  });
  try {
    const { key } = await projectWithKey(gw);
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++)
      statuses.push((await submitGeneration(gw, `sg_0123456789ab_${'x'.repeat(31)}${i}`, IMAGE)).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429]);
    const limited = await submitGeneration(gw, 'sg_nonsense', IMAGE);
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({
      code: 4290,
      message: expect.stringMatching(/too many failed sign-ins from this address/),
    });
    // The same address, a good key: served as ever.
    expect((await submitGeneration(gw, key, IMAGE)).status).toBe(200);
    expect((await graphql(gw, ADMIN, '{ viewer { kind } }')).body.data.viewer.kind).toBe('ADMIN_TOKEN');
    // GraphQL and the console's sign-in answer 429 to a bad token from this address too.
    const bad = await graphql(gw, 'sgp_0123456789ab_not-a-real-secret-not-a-real-secret-', '{ viewer { kind } }');
    expect(bad.body.errors?.[0]?.extensions?.code).toBe('TOO_MANY_REQUESTS');
    expect((await consoleSignIn(gw, 'wrong')).answer.status).toBe(429);
    // Five failures, five records: past the limit, refusals are not written (a flood writes nothing).
    expect((await sql(gw, `SELECT count(*)::int AS n FROM audit_record WHERE action = 'auth.failed'`))[0]!.n).toBe(5);
  } finally {
    await gw.close();
  }
});

test('no secret in the logs: tokens, keys, session cookies and the ADMIN_TOKEN never appear in a log line, an error or the audit trail', async () => {
  const url = await freshDatabase();
  const admin = 'break-glass-admin-token-7f3a9c2e41';
  const child = await spawnGateway({
    DATABASE_URL: url,
    ADMIN_TOKEN: admin,
    LOG_LEVEL: 'debug',
    DATA_DIR: `/tmp/sg-secrets-${process.pid}`,
    SIMULATOR_DELAY_MS: '600000',
  });
  try {
    const gw = { url: child.url } as Gateway;
    const projectId = (await graphql(gw, admin, 'mutation { createProject(name: "secrets") }')).body.data
      .createProject as string;
    const key = (
      await graphql(gw, admin, 'mutation($p: ID!) { issueApiKey(projectId: $p, name: "ci") }', { p: projectId })
    ).body.data.issueApiKey as string;
    const rotated = (
      await graphql(gw, admin, 'mutation($k: String!) { rotateApiKey(prefix: $k) }', { k: key.slice(3, 15) })
    ).body.data.rotateApiKey as string;
    const invited = (
      await graphql(gw, admin, 'mutation { invitePerson(email: "sam@example.com", role: FINANCE) { id } }')
    ).body.data.invitePerson.id as string;
    expect(invited).toBeTruthy();
    const service = (
      await graphql(gw, admin, 'mutation { createServiceAccount(name: "grafana", role: VIEWER) { id } }')
    ).body.data.createServiceAccount.id as string;
    const token = (
      await graphql(gw, admin, 'mutation($s: ID) { createToken(name: "dash", serviceAccountId: $s) { secret } }', {
        s: service,
      })
    ).body.data.createToken.secret as string;
    expect((await graphql(gw, token, '{ viewer { name } }')).body.data.viewer.name).toBe('grafana');
    expect((await submitGeneration(gw, rotated, IMAGE)).status).toBe(200);
    const signed = await consoleSignIn(gw, admin);
    expect(signed.answer.status).toBe(200);
    const session = signed.jar.get('sg_session')!;
    // Wrong ones: a near-miss admin token, a key with a wrong secret, a token in a query string.
    await graphql(gw, `${admin}x`, '{ viewer { kind } }');
    await submitGeneration(gw, `${key.slice(0, 16)}${'A'.repeat(32)}`, IMAGE);
    await fetch(`${child.url}/graphql?query=%7Bviewer%7Bkind%7D%7D&token=${token}`);
    const lines = child.output();
    expect(lines.length).toBeGreaterThan(100);
    for (const secret of [admin, key, rotated, token, session, signed.csrf, key.slice(16), token.slice(17)])
      expect(lines).not.toContain(secret);
    const audit = JSON.stringify(
      (await graphql(gw, admin, '{ auditLog(first: 200) { edges { node { actor action before after userAgent } } } }'))
        .body.data,
    );
    for (const secret of [admin, key.slice(16), rotated.slice(16), token.slice(17), session])
      expect(audit).not.toContain(secret);
    expect(audit).toContain('admin-token.read');
  } finally {
    child.proc.kill('SIGTERM');
    await child.exited;
  }
});
