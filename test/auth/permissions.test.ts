/**
 * Who may do what (decisions §11): the permission table names every GraphQL root field
 * (walked from the live schema), and every role is tried against every mutation, on a project of
 * its grant and on one outside it: what the table allows works, the rest is FORBIDDEN (or the
 * caller's own refusal), and no refused call writes a row. A sample of reads, the CSV and FOCUS
 * exports, and the console's pages follow the same table.
 */
import { getIntrospectionQuery } from 'graphql';
import type { Gateway } from '../../src/bootstrap.js';
import { FIELD_RULES, ROLE_CAPABILITIES, type Capability, type Role } from '../../src/auth/permissions.js';
import { PeopleService } from '../../src/people/people.service.js';
import { TokensService } from '../../src/people/tokens.service.js';
import { heldTask } from '../support/builders.js';
import { ADMIN, freshDatabase, gateway, graphql, http, projectWithKey, sql } from '../support/harness.js';

let gw: Gateway;
let p1: { projectId: string; key: string };
let p2: { projectId: string; key: string };
const callers: Record<string, string> = {};

async function personToken(
  email: string,
  role: 'OWNER' | 'FINANCE' | 'LEAD' | 'VIEWER',
  projectIds: string[] | null,
): Promise<string> {
  const person = await gw.app.get(PeopleService).invite(email, { role, projectIds }, 'test');
  return (await gw.app.get(TokensService).create({ personId: person.id }, 'test')).secret;
}

beforeAll(async () => {
  gw = await gateway(await freshDatabase(), { SIMULATOR_DELAY_MS: '600000', POLLER_ENABLED: 'false' });
  p1 = await projectWithKey(gw);
  p2 = await projectWithKey(gw);
  callers.admin = ADMIN;
  callers.owner = await personToken('owner@example.com', 'OWNER', null);
  callers.finance = await personToken('finance@example.com', 'FINANCE', null);
  callers.lead = await personToken('lead@example.com', 'LEAD', [p1.projectId]);
  callers.viewer = await personToken('viewer@example.com', 'VIEWER', null);
  callers.viewerP1 = await personToken('viewer-p1@example.com', 'VIEWER', [p1.projectId]);
  const service = await gw.app
    .get(PeopleService)
    .createServiceAccount('dashboards', { role: 'FINANCE', projectIds: null }, 'test');
  callers.service = (await gw.app.get(TokensService).create({ serviceAccountId: service.id }, 'grafana')).secret;
  callers.projectKey = p1.key;
}, 60_000);
afterAll(() => gw.close());

test('every GraphQL root field has a rule in the permission table, and every rule names a field', async () => {
  const schema = (await graphql(gw, ADMIN, getIntrospectionQuery())).body.data.__schema as {
    types: Array<{ name: string; fields: Array<{ name: string }> | null }>;
  };
  const fields = schema.types
    .filter((t) => t.name === 'Query' || t.name === 'Mutation')
    .flatMap((t) => t.fields!.map((f) => `${t.name}.${f.name}`));
  expect(fields.length).toBeGreaterThan(30);
  expect(fields.filter((f) => !(f in FIELD_RULES))).toEqual([]);
  expect(Object.keys(FIELD_RULES).filter((f) => !fields.includes(f))).toEqual([]);
});

/** What each mutation needs: a fresh target in `projectId` and the call. */
type Case = {
  name: string;
  run: (token: string, projectId: string) => Promise<{ errors?: Array<{ extensions?: { code?: string } }> }>;
};

const gql = async (token: string, query: string, variables?: Record<string, unknown>) =>
  (await graphql(gw, token, query, variables)).body;
const budgetIn = async (projectId: string) =>
  (
    await gql(
      ADMIN,
      `mutation($p: ID!) { setBudget(projectId: $p, unit: USD, limit: "5", period: DAILY, hard: false) }`,
      { p: projectId },
    )
  ).data.setBudget as string;
const limitIn = async (projectId: string) =>
  (
    await gql(ADMIN, `mutation($p: ID!) { setLimit(projectId: $p, kind: TASKS_IN_FLIGHT, amount: 5) }`, {
      p: projectId,
    })
  ).data.setLimit as string;
const keyIn = async (projectId: string) =>
  (
    (await gql(ADMIN, `mutation($p: ID!) { issueApiKey(projectId: $p) }`, { p: projectId })).data.issueApiKey as string
  ).slice(3, 15);
const endpointIn = async (projectId: string) =>
  (
    (
      await gql(
        ADMIN,
        `mutation($p: ID!) { createWebhookEndpoint(url: "https://hooks.example.com/x", projectId: $p) { endpoint { id } } }`,
        { p: projectId },
      )
    ).data.createWebhookEndpoint as { endpoint: { id: string } }
  ).endpoint.id;
const reviewTaskIn = async (projectId: string) => {
  const t = await heldTask(gw, { projectId });
  await sql(gw, `UPDATE task SET status = 'unknown', needs_review = true WHERE id = $1`, [t.taskId]);
  return `gw-${t.taskId}`;
};
let unique = 0;
/** An open difference: a statement (imported as the admin) billing a task that is not ours. */
const differenceIn = async () => {
  const csv = `task_id,model,time,amount,unit\n${990000000 + ++unique},seedream-4.0,2026-11-03T10:00:00Z,0.04,USD\n`;
  const made = await gql(ADMIN, `mutation($c: String!) { importVendorStatement(csv: $c) { id } }`, { c: csv });
  const [item] = await sql(gw, `SELECT id::text AS id FROM vendor_recon_item WHERE statement_id = $1`, [
    (made.data.importVendorStatement as { id: string }).id,
  ]);
  return item!.id as string;
};
let closed = 0;
let reopened = 0;
const pastMonth = (n: number) => new Date(Date.UTC(2025, 11 - n, 1)).toISOString().slice(0, 7);
/** The rows just before the call under test (after its setup), to compare with after it. */
let beforeCall: unknown;
const attempt = async (token: string, query: string, variables?: Record<string, unknown>) => {
  beforeCall = await rowCounts();
  return gql(token, query, variables);
};

const CASES: Case[] = [
  {
    name: 'createProject',
    run: (t) => attempt(t, `mutation($n: String!) { createProject(name: $n) }`, { n: `made-${++unique}` }),
  },
  {
    name: 'setProjectPolicies',
    run: (t, p) =>
      attempt(t, `mutation($p: ID!) { setProjectPolicies(projectId: $p, chatHoldMultiplier: "1.5") }`, { p }),
  },
  {
    name: 'publishPrices',
    run: (t) =>
      attempt(
        t,
        `mutation { publishPrices(rates: [{ model: "seedream-5.0", unit: USD, component: "image", key: "2K", rate: "0.05" }]) }`,
      ),
  },
  {
    name: 'publishContract',
    run: (t) =>
      attempt(
        t,
        `mutation { publishContract(terms: [{ scope: "kind", value: "image", unit: USD, discountPercent: "5" }]) }`,
      ),
  },
  {
    name: 'setCreditPrice',
    run: (t) => attempt(t, `mutation { setCreditPrice(effectiveMonth: "2027-06", usdPerCredit: "0.00106") }`),
  },
  {
    name: 'setFxRate',
    run: (t) => attempt(t, `mutation { setFxRate(currency: "EUR", effectiveMonth: "2027-06", perUsd: "0.92") }`),
  },
  {
    name: 'createCommitment',
    run: (t, p) => {
      // A month of its own each time: one commitment of a unit in force in a month.
      const n = ++unique;
      const month = `${2030 + Math.floor(n / 12)}-${String((n % 12) + 1).padStart(2, '0')}`;
      return attempt(
        t,
        `mutation($p: ID!, $m: String!) { createCommitment(projectId: $p, name: "floor", unit: USD, amount: "10", startsMonth: $m, endsMonth: $m) { id } }`,
        { p, m: month },
      );
    },
  },
  {
    name: 'issueApiKey',
    run: (t, p) => attempt(t, `mutation($p: ID!) { issueApiKey(projectId: $p, name: "ci") }`, { p }),
  },
  {
    name: 'rotateApiKey',
    run: async (t, p) =>
      attempt(t, `mutation($k: String!) { rotateApiKey(prefix: $k, overlapSeconds: 60) }`, { k: await keyIn(p) }),
  },
  {
    name: 'revokeApiKey',
    run: async (t, p) => attempt(t, `mutation($k: String!) { revokeApiKey(prefix: $k) }`, { k: await keyIn(p) }),
  },
  {
    name: 'setBudget',
    run: (t, p) =>
      attempt(
        t,
        `mutation($p: ID!) { setBudget(projectId: $p, unit: CREDITS, limit: "9", period: WEEKLY, hard: true) }`,
        { p },
      ),
  },
  {
    name: 'updateBudget',
    run: async (t, p) =>
      attempt(t, `mutation($b: ID!) { updateBudget(budgetId: $b, limit: "6") }`, { b: await budgetIn(p) }),
  },
  {
    name: 'deleteBudget',
    run: async (t, p) => attempt(t, `mutation($b: ID!) { deleteBudget(budgetId: $b) }`, { b: await budgetIn(p) }),
  },
  {
    name: 'setLimit',
    run: (t, p) =>
      attempt(t, `mutation($p: ID!) { setLimit(projectId: $p, kind: REQUESTS_PER_MINUTE, amount: 60) }`, { p }),
  },
  {
    name: 'deleteLimit',
    run: async (t, p) => attempt(t, `mutation($l: ID!) { deleteLimit(limitId: $l) }`, { l: await limitIn(p) }),
  },
  {
    name: 'adjustLedger',
    run: (t, p) =>
      attempt(t, `mutation($p: ID!) { adjustLedger(projectId: $p, unit: USD, amount: "-0.01", reason: "r") }`, { p }),
  },
  {
    name: 'resolveTask',
    run: async (t, p) =>
      attempt(t, `mutation($t: ID!) { resolveTask(taskId: $t, outcome: RELEASE, reason: "r") { status } }`, {
        t: await reviewTaskIn(p),
      }),
  },
  {
    name: 'createWebhookEndpoint',
    run: (t, p) =>
      attempt(
        t,
        `mutation($p: ID!) { createWebhookEndpoint(url: "https://hooks.example.com/y", projectId: $p) { secret } }`,
        { p },
      ),
  },
  {
    name: 'setWebhookEndpointEnabled',
    run: async (t, p) =>
      attempt(t, `mutation($e: ID!) { setWebhookEndpointEnabled(id: $e, enabled: false) { id } }`, {
        e: await endpointIn(p),
      }),
  },
  {
    name: 'deleteWebhookEndpoint',
    run: async (t, p) => attempt(t, `mutation($e: ID!) { deleteWebhookEndpoint(id: $e) }`, { e: await endpointIn(p) }),
  },
  {
    name: 'sendTestWebhook',
    run: async (t, p) => attempt(t, `mutation($e: ID!) { sendTestWebhook(id: $e) }`, { e: await endpointIn(p) }),
  },
  {
    name: 'redeliverWebhook',
    run: async (t, p) => {
      await endpointIn(p);
      await sql(gw, `SELECT spendgate_emit('task.overrun', $1, $2, '{}'::jsonb)`, [p, `perm-${++unique}`]);
      const [d] = await sql(
        gw,
        `SELECT d.id::text AS id FROM webhook_delivery d JOIN webhook_endpoint w ON w.id = d.endpoint_id WHERE w.project_id = $1 ORDER BY d.id DESC LIMIT 1`,
        [p],
      );
      return attempt(t, `mutation($d: ID!) { redeliverWebhook(deliveryId: $d) }`, { d: d!.id });
    },
  },
  {
    name: 'invitePerson',
    run: (t) =>
      attempt(t, `mutation($e: String!) { invitePerson(email: $e, role: VIEWER) { id } }`, {
        e: `p${++unique}@example.com`,
      }),
  },
  {
    name: 'setRole',
    run: async (t, p) => {
      const person = await gw.app
        .get(PeopleService)
        .invite(`r${++unique}@example.com`, { role: 'VIEWER', projectIds: [] }, 'test');
      return attempt(
        t,
        `mutation($id: ID!, $p: [ID!]) { setRole(personId: $id, role: LEAD, projectIds: $p) { role } }`,
        { id: person.id, p: [p] },
      );
    },
  },
  {
    name: 'disablePerson',
    run: async (t) => {
      const person = await gw.app
        .get(PeopleService)
        .invite(`d${++unique}@example.com`, { role: 'VIEWER', projectIds: [] }, 'test');
      return attempt(t, `mutation($id: ID!) { disablePerson(personId: $id) { state } }`, { id: person.id });
    },
  },
  {
    name: 'createServiceAccount',
    run: (t) =>
      attempt(t, `mutation($n: String!) { createServiceAccount(name: $n, role: VIEWER) { id } }`, {
        n: `svc-${++unique}`,
      }),
  },
  // Each allowed close takes another past month with nothing in it (2025-12, 2025-11, …).
  {
    name: 'closeMonth',
    run: (t) => attempt(t, `mutation($m: String!) { closeMonth(month: $m) { month } }`, { m: pastMonth(closed++) }),
  },
  {
    name: 'reopenMonth',
    run: async (t) => {
      // The latest closed month (2026-01, 2026-02, …, each later than any closed before).
      const month = `2026-${String(++reopened).padStart(2, '0')}`;
      await gql(ADMIN, `mutation($m: String!) { closeMonth(month: $m) { month } }`, { m: month });
      return attempt(t, `mutation($m: String!) { reopenMonth(month: $m, reason: "r") }`, { m: month });
    },
  },
  {
    name: 'importVendorStatement',
    run: (t) =>
      attempt(t, `mutation($c: String!) { importVendorStatement(csv: $c) { id } }`, {
        c: `task_id,model,time,amount,unit\n${980000000 + ++unique},seedream-4.0,2026-11-03T10:00:00Z,0.04,USD\n`,
      }),
  },
  {
    name: 'acceptVendorDifference',
    run: async (t) =>
      attempt(t, `mutation($d: ID!) { acceptVendorDifference(id: $d) { state } }`, { d: await differenceIn() }),
  },
  {
    name: 'disputeVendorDifference',
    run: async (t) =>
      attempt(t, `mutation($d: ID!) { disputeVendorDifference(id: $d, note: "n") { state } }`, {
        d: await differenceIn(),
      }),
  },
  {
    name: 'createToken',
    run: (t) => attempt(t, `mutation($n: String!) { createToken(name: $n) { secret } }`, { n: `own-${++unique}` }),
  },
  {
    name: 'revokeToken',
    run: async (t) => {
      // Someone else's token (a service account's): only people's managers may revoke it.
      const holder = await gw.app
        .get(PeopleService)
        .createServiceAccount(`held-${++unique}`, { role: 'VIEWER', projectIds: null }, 'test');
      const { token } = await gw.app.get(TokensService).create({ serviceAccountId: holder.id }, 'theirs');
      return attempt(t, `mutation($id: ID!) { revokeToken(tokenId: $id) }`, { id: token.id });
    },
  },
];

/**
 * Who may, per decisions §11 as written: `in` a project of their grant (p1 for the lead and viewerP1), `out` on p2. The
 * table must say the same.
 */
const ALLOWED: Record<string, { in: string[]; out: string[] }> = {
  createProject: { in: ['admin', 'owner'], out: ['admin', 'owner'] },
  setProjectPolicies: { in: ['admin', 'owner'], out: ['admin', 'owner'] },
  publishPrices: { in: ['admin', 'owner'], out: ['admin', 'owner'] },
  publishContract: { in: ['admin', 'owner', 'finance', 'service'], out: ['admin', 'owner', 'finance', 'service'] },
  setCreditPrice: { in: ['admin', 'owner', 'finance', 'service'], out: ['admin', 'owner', 'finance', 'service'] },
  setFxRate: { in: ['admin', 'owner', 'finance', 'service'], out: ['admin', 'owner', 'finance', 'service'] },
  createCommitment: { in: ['admin', 'owner', 'finance', 'service'], out: ['admin', 'owner', 'finance', 'service'] },
  issueApiKey: { in: ['admin', 'owner', 'lead'], out: ['admin', 'owner'] },
  rotateApiKey: { in: ['admin', 'owner', 'lead'], out: ['admin', 'owner'] },
  revokeApiKey: { in: ['admin', 'owner', 'lead'], out: ['admin', 'owner'] },
  setBudget: { in: ['admin', 'owner', 'finance', 'lead', 'service'], out: ['admin', 'owner', 'finance', 'service'] },
  updateBudget: { in: ['admin', 'owner', 'finance', 'lead', 'service'], out: ['admin', 'owner', 'finance', 'service'] },
  deleteBudget: { in: ['admin', 'owner', 'finance', 'lead', 'service'], out: ['admin', 'owner', 'finance', 'service'] },
  setLimit: { in: ['admin', 'owner', 'finance', 'lead', 'service'], out: ['admin', 'owner', 'finance', 'service'] },
  deleteLimit: { in: ['admin', 'owner', 'finance', 'lead', 'service'], out: ['admin', 'owner', 'finance', 'service'] },
  adjustLedger: { in: ['admin', 'owner', 'finance', 'lead', 'service'], out: ['admin', 'owner', 'finance', 'service'] },
  resolveTask: { in: ['admin', 'owner', 'finance', 'lead', 'service'], out: ['admin', 'owner', 'finance', 'service'] },
  createWebhookEndpoint: { in: ['admin', 'owner', 'lead'], out: ['admin', 'owner'] },
  setWebhookEndpointEnabled: { in: ['admin', 'owner', 'lead'], out: ['admin', 'owner'] },
  deleteWebhookEndpoint: { in: ['admin', 'owner', 'lead'], out: ['admin', 'owner'] },
  sendTestWebhook: { in: ['admin', 'owner', 'lead'], out: ['admin', 'owner'] },
  redeliverWebhook: { in: ['admin', 'owner', 'lead'], out: ['admin', 'owner'] },
  invitePerson: { in: ['admin', 'owner'], out: ['admin', 'owner'] },
  setRole: { in: ['admin', 'owner'], out: ['admin', 'owner'] },
  disablePerson: { in: ['admin', 'owner'], out: ['admin', 'owner'] },
  createServiceAccount: { in: ['admin', 'owner'], out: ['admin', 'owner'] },
  // Their own token: anyone who is a person or a service account (the ADMIN_TOKEN and a project key have none).
  createToken: {
    in: ['owner', 'finance', 'lead', 'viewer', 'viewerP1', 'service'],
    out: ['owner', 'finance', 'lead', 'viewer', 'viewerP1', 'service'],
  },
  revokeToken: { in: ['admin', 'owner'], out: ['admin', 'owner'] },
  closeMonth: { in: ['admin', 'owner', 'finance', 'service'], out: ['admin', 'owner', 'finance', 'service'] },
  reopenMonth: { in: ['admin', 'owner'], out: ['admin', 'owner'] },
  importVendorStatement: {
    in: ['admin', 'owner', 'finance', 'service'],
    out: ['admin', 'owner', 'finance', 'service'],
  },
  acceptVendorDifference: {
    in: ['admin', 'owner', 'finance', 'service'],
    out: ['admin', 'owner', 'finance', 'service'],
  },
  disputeVendorDifference: {
    in: ['admin', 'owner', 'finance', 'service'],
    out: ['admin', 'owner', 'finance', 'service'],
  },
};

/**
 * The matrix the permission table states, derived from it: each caller's role and grant (as set up
 * in beforeAll) against each mutation's rule, on a target in a project of the grant (`in`, p1) and
 * outside it (`out`, p2). The runs below expect exactly this, so the table is what is proven.
 */
const GRANTS: Record<string, { role: Role; projects: 'all' | ['p1'] } | 'admin' | 'key'> = {
  admin: 'admin',
  owner: { role: 'OWNER', projects: 'all' },
  finance: { role: 'FINANCE', projects: 'all' },
  lead: { role: 'LEAD', projects: ['p1'] },
  viewer: { role: 'VIEWER', projects: 'all' },
  viewerP1: { role: 'VIEWER', projects: ['p1'] },
  service: { role: 'FINANCE', projects: 'all' },
  projectKey: 'key',
};
/**
 * `self` fields the cases call on someone else's thing (a service account's token): the people capability on all
 * decides.
 */
const ON_ANOTHERS = new Set(['revokeToken']);
function derivedFromTable(mutation: string, caller: string, where: 'in' | 'out'): boolean {
  const rule = FIELD_RULES[`Mutation.${mutation}`]!;
  const grant = GRANTS[caller]!;
  if (grant === 'key') return false; // a project key reads its own project; it changes nothing
  const role: Role = grant === 'admin' ? 'OWNER' : grant.role;
  const everywhere = grant === 'admin' || role === 'OWNER' || grant.projects === 'all';
  const holds = (capability: Capability) => ROLE_CAPABILITIES[role].includes(capability);
  switch (rule.scope) {
    case 'self':
      return ON_ANOTHERS.has(mutation) ? everywhere && holds('people') : grant !== 'admin';
    case 'global':
      return everywhere && holds(rule.capability!);
    case 'project':
    case 'target':
      // Each case names the project (or a thing in it): p1 `in`, p2 `out`.
      return holds(rule.capability!) && (everywhere || where === 'in');
    default:
      throw new Error(`${mutation}: a mutation with scope ${rule.scope} needs a line here`);
  }
}

test('the matrix derived from the permission table is what decisions §11 states', () => {
  for (const mutation of Object.keys(ALLOWED)) {
    for (const where of ['in', 'out'] as const) {
      const derived = Object.keys(GRANTS).filter((caller) => derivedFromTable(mutation, caller, where));
      expect({ mutation, where, allowed: derived.sort() }).toEqual({
        mutation,
        where,
        allowed: [...ALLOWED[mutation]![where]].sort(),
      });
    }
  }
});

test('no resolver checks a target or a project on its own: the guard applies the table', async () => {
  const { readdirSync, readFileSync } = await import('node:fs');
  const files = (readdirSync('src', { recursive: true }) as string[]).filter((f) => f.endsWith('.resolver.ts'));
  expect(files.length).toBeGreaterThan(10);
  const checking = files.filter((f) =>
    /requireOnTarget\(|requireAccess\(who, '\w+', projectId/.test(readFileSync(`src/${f}`, 'utf8')),
  );
  expect(checking).toEqual([]);
});

test('every mutation in the schema is tried below', () => {
  const mutations = Object.keys(FIELD_RULES)
    .filter((f) => f.startsWith('Mutation.'))
    .map((f) => f.slice('Mutation.'.length));
  expect(Object.keys(ALLOWED).sort()).toEqual(mutations.sort());
  expect(CASES.map((c) => c.name).sort()).toEqual(mutations.sort());
});

/** Rows of every table a mutation could write (the audit trail aside). */
const rowCounts = async () =>
  (
    await sql(
      gw,
      `SELECT (SELECT count(*) FROM project) + (SELECT count(*) FROM api_key WHERE revoked_at IS NULL) * 1000 + (SELECT count(*) FROM budget WHERE deleted_at IS NULL) * 100000 + (SELECT count(*) FROM usage_limit) * 100000
     + (SELECT count(*) FROM ledger_entry) * 10000000 + (SELECT count(*) FROM webhook_endpoint WHERE deleted_at IS NULL AND enabled) * 1000000000
     + (SELECT count(*) FROM person WHERE state <> 'disabled') * 100000000000 + (SELECT count(*) FROM service_account) * 10000000000000
     + (SELECT count(*) FROM price_book_version) * 1000000000000000 AS n,
     (SELECT count(*) FROM access_token WHERE revoked_at IS NULL) AS tokens,
     (SELECT count(*) FROM month_close WHERE reopened_at IS NULL) AS closes,
     (SELECT count(*) FROM vendor_statement) AS statements,
     (SELECT count(*) FROM vendor_recon_item WHERE state = 'open') AS differences,
     (SELECT string_agg(status || needs_review::text, ',' ORDER BY id) FROM task) AS tasks,
     (SELECT string_agg(project_id::text || role::text, ',' ORDER BY id) FROM (SELECT id, project_ids[1] AS project_id, role FROM person) x) AS roles,
     (SELECT string_agg(chat_hold_multiplier::text, ',' ORDER BY id) FROM project) AS policies,
     (SELECT string_agg(hash::text, ',' ORDER BY id) FROM api_key) AS hashes,
     (SELECT string_agg("limit"::text, ',' ORDER BY id) FROM budget) AS limits,
     (SELECT count(*) FROM webhook_delivery WHERE status = 'PENDING') AS pending`,
    )
  )[0];

describe.each(Object.keys(ALLOWED))('%s', (mutation) => {
  const testCase = CASES.find((c) => c.name === mutation)!;
  test.each(['admin', 'owner', 'finance', 'lead', 'viewer', 'viewerP1', 'service', 'projectKey'])(
    'as %s, on a project of the grant and outside it',
    async (caller) => {
      for (const where of ['in', 'out'] as const) {
        const projectId = where === 'in' ? p1.projectId : p2.projectId;
        const allowed = derivedFromTable(mutation, caller, where);
        // Setup writes (a budget, a key, a task) happen inside run; rows are compared around the call itself.
        const body = await testCase.run(callers[caller]!, projectId);
        if (allowed) {
          expect({ mutation, caller, where, errors: body.errors }).toEqual({
            mutation,
            caller,
            where,
            errors: undefined,
          });
        } else {
          expect({ mutation, caller, where, code: body.errors?.[0]?.extensions?.code }).toEqual({
            mutation,
            caller,
            where,
            code: 'FORBIDDEN',
          });
          expect({ mutation, caller, where, rows: await rowCounts() }).toEqual({
            mutation,
            caller,
            where,
            rows: beforeCall,
          });
        }
      }
    },
  );
});

test('refused calls on an existing target change nothing: the target is as it was', async () => {
  const budget = await budgetIn(p2.projectId);
  const refused = await gql(callers.lead!, `mutation($b: ID!) { updateBudget(budgetId: $b, limit: "999") }`, {
    b: budget,
  });
  expect(refused.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  expect((await sql(gw, `SELECT "limit"::text AS l FROM budget WHERE id = $1`, [budget]))[0]!.l).toBe('5');
  // A target in another project and one that does not exist are refused alike: nothing is learned.
  const missing = await gql(
    callers.lead!,
    `mutation { updateBudget(budgetId: "6b1f9a0e-0000-4000-8000-000000000000", limit: "1") }`,
  );
  expect(missing.errors?.[0]?.message.replace(/[0-9a-f-]{36}/, 'ID')).toBe(
    refused.errors?.[0]?.message.replace(/[0-9a-f-]{36}/, 'ID'),
  );
});

test("reads follow the grant: tasks, budgets, reports, CSV and FOCUS exports, the audit trail, the console's pages", async () => {
  await heldTask(gw, { projectId: p1.projectId });
  await heldTask(gw, { projectId: p2.projectId });
  const tasksOf = async (token: string) =>
    (
      (await gql(token, '{ tasks(first: 200) { edges { node { projectId } } } }')).data.tasks.edges as Array<{
        node: { projectId: string };
      }>
    ).map((e) => e.node.projectId);
  expect(new Set(await tasksOf(callers.viewerP1!))).toEqual(new Set([p1.projectId]));
  expect(new Set(await tasksOf(callers.viewer!))).toEqual(new Set([p1.projectId, p2.projectId]));
  expect(
    (await gql(callers.viewerP1!, `query($p: ID!) { budgetStatus(projectId: $p) { budgetId } }`, { p: p2.projectId }))
      .errors?.[0]?.extensions?.code,
  ).toBe('FORBIDDEN');
  const range = 'from=2026-01-01T00:00:00Z&to=2027-01-01T00:00:00Z&currency=USD';
  for (const path of ['spend.csv', 'focus.csv', 'converted.csv']) {
    expect(
      (await http(`${gw.url}/reports/${path}?${range}&projectIds=${p2.projectId}`, { key: callers.viewerP1! })).status,
    ).toBe(403);
    expect((await http(`${gw.url}/reports/${path}?${range}`, { key: callers.viewerP1! })).status).toBe(200);
  }
  expect((await http(`${gw.url}/reports/audit.csv`, { key: callers.viewer! })).status).toBe(403);
  expect(
    (await gql(callers.viewer!, '{ auditLog(first: 5) { edges { node { seq } } } }')).errors?.[0]?.extensions?.code,
  ).toBe('FORBIDDEN');
  const leadAudit = (await gql(callers.lead!, '{ auditLog(first: 500) { edges { node { projectId action } } } }')).data
    .auditLog.edges as Array<{ node: { projectId: string | null } }>;
  expect(leadAudit.length).toBeGreaterThan(0);
  expect(new Set(leadAudit.map((e) => e.node.projectId))).toEqual(new Set([p1.projectId]));
  const pages = async (token: string) => (await gql(token, '{ viewer { kind role pages can } }')).data.viewer;
  expect(await pages(callers.owner!)).toMatchObject({
    kind: 'PERSON',
    role: 'OWNER',
    pages: expect.arrayContaining(['people', 'audit', 'tokens']),
  });
  expect((await pages(callers.viewer!)).pages).toEqual([
    'overview',
    'budgets',
    'tasks',
    'review',
    'prices',
    'alerts',
    'tokens',
    'months',
  ]);
  expect((await pages(callers.projectKey!)).pages).not.toContain('tokens');
  expect(await pages(callers.lead!)).toMatchObject({
    can: ['read', 'budgets', 'keys', 'webhooks', 'corrections', 'audit'],
  });
});

test('the table decides before anything runs: a project-scoped field asked twice, once outside the grant, is refused whole and writes nothing', async () => {
  const count = async () =>
    (
      await sql(gw, `SELECT count(*)::int AS n FROM budget WHERE project_id = $1 AND period = 'WEEKLY'`, [p1.projectId])
    )[0]!.n;
  const before = await count();
  const both = await gql(
    callers.lead!,
    `mutation($a: ID!, $b: ID!) { mine: setBudget(projectId: $a, unit: USD, limit: "7", period: WEEKLY, hard: false) other: setBudget(projectId: $b, unit: USD, limit: "7", period: WEEKLY, hard: false) }`,
    { a: p1.projectId, b: p2.projectId },
  );
  // Before, each resolver checked its own call: the lead's budget on p1 was written beside the refusal on p2.
  expect(both.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  expect(both.data ?? null).toBeNull();
  expect(await count()).toBe(before);
  // An ID sent as a number is checked as the text GraphQL makes of it.
  const numeric = await gql(
    callers.lead!,
    `mutation { setBudget(projectId: 123, unit: USD, limit: "7", period: WEEKLY, hard: false) }`,
  );
  expect(numeric.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  // The same field alone on the lead's project is done.
  const mine = await gql(
    callers.lead!,
    `mutation($a: ID!) { setBudget(projectId: $a, unit: USD, limit: "7", period: WEEKLY, hard: false) }`,
    { a: p1.projectId },
  );
  expect(mine.errors).toBeUndefined();
  expect(await count()).toBe(before + 1);
});

test('a target-scoped field is decided by the table too: a budget of the grant and one outside it, deleted in one operation, are refused whole', async () => {
  const mineBudget = await budgetIn(p1.projectId);
  const otherBudget = await budgetIn(p2.projectId);
  const live = async () =>
    (
      await sql(gw, `SELECT count(*)::int AS n FROM budget WHERE id = ANY($1::uuid[]) AND deleted_at IS NULL`, [
        [mineBudget, otherBudget],
      ])
    )[0]!.n;
  const both = await gql(
    callers.lead!,
    `mutation($a: ID!, $b: ID!) { mine: deleteBudget(budgetId: $a) other: deleteBudget(budgetId: $b) }`,
    { a: mineBudget, b: otherBudget },
  );
  // Before, each resolver looked up its own target: the lead's budget on p1 was deleted beside the refusal on p2.
  expect(both.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  expect(both.data ?? null).toBeNull();
  expect(await live()).toBe(2);
  // A malformed id is the caller's mistake (400), asked before anything runs; a missing one is "not found" to those who
  // see everything.
  const malformed = await gql(callers.owner!, `mutation { deleteBudget(budgetId: "not-a-uuid") }`);
  expect(malformed.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', status: 400 });
  const missing = await gql(
    callers.owner!,
    `mutation { deleteBudget(budgetId: "6b1f9a0e-0000-4000-8000-000000000000") }`,
  );
  expect(missing.errors?.[0]?.extensions).toMatchObject({ code: 'NOT_FOUND', status: 404 });
  const alone = await gql(callers.lead!, `mutation($a: ID!) { deleteBudget(budgetId: $a) }`, { a: mineBudget });
  expect(alone.errors).toBeUndefined();
  expect(await live()).toBe(1);
});
