/**
 * The audit trail (decisions §12): 200 concurrent budget changes by several people over
 * two gateway instances give 200 records in one chain that verifies; the table refuses UPDATE and
 * DELETE; and with the triggers off (session_replication_role = replica, as a superuser could),
 * an edited, deleted, inserted or reordered record makes `spendgate audit verify` exit non-zero
 * naming it. A head kept elsewhere proves a cut-off end. The GraphQL auditLog and the CSV export.
 */
import { spawnSync } from 'node:child_process';
import { chainHash, type AuditContent } from '../../src/audit/audit-chain.js';
import type { Gateway } from '../../src/bootstrap.js';
import { PeopleService } from '../../src/people/people.service.js';
import { TokensService } from '../../src/people/tokens.service.js';
import { ADMIN, freshDatabase, gateway, graphql, http, projectWithKey, sql } from '../support/harness.js';
import { asSuperuser, runCli } from '../support/tampering.js';

let url: string;
let one: Gateway;
let two: Gateway;
let projectId: string;

const verify = (...args: string[]) => runCli(url, ['audit', 'verify', ...args]);
/** As a superuser with the triggers off: what verify must catch. */
const tamper = (statements: string[]) => asSuperuser(url, statements);

beforeAll(async () => {
  url = await freshDatabase();
  one = await gateway(url);
  two = await gateway(url);
  projectId = (await projectWithKey(one, 'audited')).projectId;
}, 60_000);
afterAll(async () => {
  await one.close();
  await two.close();
});

test('200 concurrent budget changes by three people over two instances: 200 records, one chain, each naming its person', async () => {
  const people = await Promise.all(
    (['OWNER', 'FINANCE', 'LEAD'] as const).map(async (role, i) => {
      const p = await one.app
        .get(PeopleService)
        .invite(
          `${role.toLowerCase()}@example.com`,
          { role, projectIds: role === 'LEAD' ? [projectId] : null },
          'test',
        );
      return {
        email: `${role.toLowerCase()}@example.com`,
        token: (await one.app.get(TokensService).create({ personId: p.id }, `t${i}`)).secret,
      };
    }),
  );
  const budget = (
    await graphql(
      one,
      people[0]!.token,
      `
        mutation ($p: ID!) {
          setBudget(projectId: $p, unit: USD, limit: "100", period: MONTHLY, hard: true)
        }
      `,
      { p: projectId },
    )
  ).body.data.setBudget as string;
  const startSeq = Number((await sql(one, 'SELECT coalesce(max(seq), 0)::int AS n FROM audit_record'))[0]!.n);

  const answers = await Promise.all(
    Array.from({ length: 200 }, (_, i) => {
      const who = people[i % 3]!;
      const gw = i % 2 ? two : one;
      return graphql(
        gw,
        who.token,
        `
          mutation ($b: ID!, $l: Decimal!) {
            updateBudget(budgetId: $b, limit: $l)
          }
        `,
        { b: budget, l: `${100 + i}.5` },
      );
    }),
  );
  expect(answers.filter((a) => a.body.errors)).toEqual([]);
  const records = await sql(
    one,
    `SELECT seq::int AS seq, actor, after FROM audit_record WHERE action = 'budget.update' AND seq > $1 ORDER BY seq`,
    [startSeq],
  );
  expect(records).toHaveLength(200);
  expect(new Set(records.map((r) => r.actor))).toEqual(new Set(people.map((p) => p.email)));
  // Every limit written is in exactly one record, and the budget ends at the last record's.
  expect(new Set(records.map((r) => JSON.parse(r.after as string).limit)).size).toBe(200);
  const [final] = await sql(one, 'SELECT "limit"::text AS l FROM budget WHERE id = $1', [budget]);
  expect(JSON.parse(records.at(-1)!.after as string).limit).toBe(final!.l);

  const verified = verify();
  expect(verified).toEqual({
    code: 0,
    out: expect.stringMatching(/^audit verify: \d+ records chain; head \d+ [0-9a-f]{64}\n$/),
  });
});

test('the table refuses UPDATE, DELETE and TRUNCATE', async () => {
  for (const statement of [
    'UPDATE audit_record SET actor = $$x$$ WHERE seq = 1',
    'DELETE FROM audit_record WHERE seq = 1',
    'TRUNCATE audit_record',
  ]) {
    await expect(sql(one, statement)).rejects.toThrow(/audit_record is append-only/);
  }
});

test('with the triggers off, an edited, deleted, inserted or reordered record is found and named; undone, the chain verifies again', async () => {
  const count = Number((await sql(one, 'SELECT count(*)::int AS n FROM audit_record'))[0]!.n);
  expect(count).toBeGreaterThan(150);
  const row = async (seq: number) => (await sql(one, 'SELECT * FROM audit_record WHERE seq = $1', [seq]))[0]!;

  // Edited: a raised limit made to look smaller.
  const edited = await row(50);
  await tamper([`UPDATE audit_record SET after = '{"limit":"1"}' WHERE seq = 50`]);
  expect(verify()).toEqual({
    code: 1,
    out: expect.stringMatching(/FAILED at record 50: its content does not match its hash: it was edited/),
  });
  await tamper([`UPDATE audit_record SET after = ${literal(edited.after)} WHERE seq = 50`]);
  expect(verify().code).toBe(0);

  // Deleted: record 60 gone; 61 names the gap.
  const deleted = await row(60);
  await tamper(['DELETE FROM audit_record WHERE seq = 60']);
  expect(verify()).toEqual({ code: 1, out: expect.stringMatching(/FAILED at record 61: follows record 59/) });
  await tamper([insertOf(deleted)]);
  expect(verify().code).toBe(0);

  // Deleted with the numbers closed up (60.. renumbered): 60 no longer chains to 59.
  await tamper([
    'DELETE FROM audit_record WHERE seq = 60',
    'UPDATE audit_record SET seq = -seq WHERE seq > 60',
    'UPDATE audit_record SET seq = -seq - 1 WHERE seq < 0',
  ]);
  expect(verify()).toEqual({ code: 1, out: expect.stringMatching(/FAILED at record 60: does not chain/) });
  await tamper([
    'UPDATE audit_record SET seq = -seq - 1 WHERE seq >= 60',
    'UPDATE audit_record SET seq = -seq WHERE seq < 0',
    insertOf(deleted),
  ]);
  expect(verify().code).toBe(0);

  // Inserted: a forged record at 101, correctly hashed onto 100, the rest moved up: 102 no longer chains.
  const hundred = await row(100);
  const forged: AuditContent = {
    seq: '101',
    at: new Date(hundred.at as Date).toISOString(),
    actorKind: 'person',
    actorId: null,
    actor: 'finance@example.com',
    action: 'budget.update',
    targetKind: 'budget',
    targetId: null,
    projectId,
    before: null,
    after: '{"limit":"1"}',
    requestId: null,
    clientAddress: null,
    userAgent: null,
  };
  const forgedHash = chainHash(hundred.hash as Buffer, forged);
  await tamper([
    'UPDATE audit_record SET seq = -seq WHERE seq > 100',
    'UPDATE audit_record SET seq = -seq + 1 WHERE seq < 0',
    `INSERT INTO audit_record (seq, at, actor_kind, actor, action, target_kind, project_id, after, prev_hash, hash)
     VALUES (101, '${forged.at}', 'person', 'finance@example.com', 'budget.update', 'budget', '${projectId}', '{"limit":"1"}', '\\x${(hundred.hash as Buffer).toString('hex')}', '\\x${forgedHash.toString('hex')}')`,
  ]);
  expect(verify()).toEqual({ code: 1, out: expect.stringMatching(/FAILED at record 102: does not chain/) });
  await tamper([
    'DELETE FROM audit_record WHERE seq = 101',
    'UPDATE audit_record SET seq = -seq WHERE seq > 101',
    'UPDATE audit_record SET seq = -seq - 1 WHERE seq < 0',
  ]);
  expect(verify().code).toBe(0);

  // Reordered: 120 and 121 swapped.
  await tamper([
    'UPDATE audit_record SET seq = -1 WHERE seq = 120',
    'UPDATE audit_record SET seq = 120 WHERE seq = 121',
    'UPDATE audit_record SET seq = 121 WHERE seq = -1',
  ]);
  expect(verify()).toEqual({ code: 1, out: expect.stringMatching(/FAILED at record 120: does not chain/) });
  await tamper([
    'UPDATE audit_record SET seq = -1 WHERE seq = 120',
    'UPDATE audit_record SET seq = 120 WHERE seq = 121',
    'UPDATE audit_record SET seq = 121 WHERE seq = -1',
  ]);
  expect(verify().code).toBe(0);

  // The end cut off: the chain still links, but a head kept elsewhere is no longer in it.
  const head = spawnSync(process.execPath, ['dist/src/cli/main.js', 'audit', 'head'], {
    env: { PATH: process.env.PATH, DATABASE_URL: url },
    encoding: 'utf8',
  })
    .stdout.trim()
    .split(' ');
  expect(verify('--head', head[1]!).code).toBe(0);
  const last = await row(Number(head[0]));
  await tamper([`DELETE FROM audit_record WHERE seq = ${head[0]}`]);
  expect(verify().code).toBe(0);
  expect(verify('--head', head[1]!)).toEqual({
    code: 1,
    out: expect.stringMatching(/the head kept elsewhere is not in the chain/),
  });
  await tamper([insertOf(last)]);
  expect(verify('--head', head[1]!).code).toBe(0);
  expect(verify('--head', 'nothex')).toEqual({ code: 2, out: expect.stringMatching(/HASH is the 64 hex digits/) });
});

test('auditLog filters by actor, action, project and time, pages, and matches the CSV export', async () => {
  const all = await graphql(
    one,
    ADMIN,
    `
      query ($p: ID) {
        auditLog(action: "budget.", projectId: $p, first: 500) {
          edges {
            node {
              seq
              actor
              action
              target
              projectId
              after
              hash
            }
          }
          pageInfo {
            hasNextPage
          }
        }
      }
    `,
    { p: projectId },
  );
  const edges = all.body.data.auditLog.edges as Array<{
    node: { seq: string; actor: string; action: string; target: string; hash: string };
  }>;
  expect(edges.length).toBeGreaterThanOrEqual(201);
  expect(edges.every((e) => e.node.action.startsWith('budget.'))).toBe(true);
  expect(Number(edges[0]!.node.seq)).toBeGreaterThan(Number(edges.at(-1)!.node.seq)); // newest first
  expect(edges[0]!.node.target).toMatch(/^budget [0-9a-f-]{36}$/);
  const lena = await graphql(
    one,
    ADMIN,
    `
      {
        auditLog(actor: "lead@", first: 500) {
          edges {
            node {
              actor
            }
          }
        }
      }
    `,
  );
  expect(
    new Set((lena.body.data.auditLog.edges as Array<{ node: { actor: string } }>).map((e) => e.node.actor)),
  ).toEqual(new Set(['lead@example.com']));
  // Pages: 10 at a time, no record twice, none missed.
  const seen: string[] = [];
  let after: string | null = null;
  for (let i = 0; i < 3; i++) {
    const page: { edges: Array<{ cursor: string; node: { seq: string } }>; pageInfo: { endCursor: string } } = (
      await graphql(
        one,
        ADMIN,
        `
          query ($a: String) {
            auditLog(first: 10, after: $a) {
              edges {
                cursor
                node {
                  seq
                }
              }
              pageInfo {
                endCursor
              }
            }
          }
        `,
        { a: after },
      )
    ).body.data.auditLog;
    seen.push(...page.edges.map((e) => e.node.seq));
    after = page.pageInfo.endCursor;
  }
  expect(new Set(seen).size).toBe(30);
  expect(Number(seen[0]) - Number(seen[29]!)).toBe(29);
  // Nothing before a time in the future.
  expect(
    (
      await graphql(
        one,
        ADMIN,
        `
          {
            auditLog(from: "2099-01-01T00:00:00Z") {
              edges {
                node {
                  seq
                }
              }
            }
          }
        `,
      )
    ).body.data.auditLog.edges,
  ).toEqual([]);
  const csv = await http(`${one.url}/reports/audit.csv?action=budget.update&projectId=${projectId}`, { key: ADMIN });
  expect(csv.status).toBe(200);
  expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
  const lines = csv.text.trim().split('\n');
  expect(lines[0]).toMatch(
    /^seq,at,actor_kind,actor,action,target_kind,target_id,project_id,before,after,request_id,client_address,user_agent,prev_hash,hash$/,
  );
  expect(lines.length - 1).toBe(edges.filter((e) => e.node.action === 'budget.update').length);
});

function literal(value: unknown): string {
  return value === null ? 'NULL' : `'${String(value).replace(/'/g, "''")}'`;
}

function insertOf(r: Record<string, unknown>): string {
  const hex = (b: unknown) => `'\\x${(b as Buffer).toString('hex')}'`;
  return `INSERT INTO audit_record (seq, at, actor_kind, actor_id, actor, action, target_kind, target_id, project_id, before, after, request_id, client_address, user_agent, prev_hash, hash)
    VALUES (${r.seq}, '${(r.at as Date).toISOString()}', ${literal(r.actor_kind)}, ${literal(r.actor_id)}, ${literal(r.actor)}, ${literal(r.action)}, ${literal(r.target_kind)},
      ${literal(r.target_id)}, ${literal(r.project_id)}, ${literal(r.before)}, ${literal(r.after)}, ${literal(r.request_id)}, ${literal(r.client_address)}, ${literal(r.user_agent)}, ${hex(r.prev_hash)}, ${hex(r.hash)})`;
}
