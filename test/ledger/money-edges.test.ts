/**
 * Money at the edges (decisions §3, §4, §6, §10), each through the real HTTP and GraphQL edges on real
 * PostgreSQL: a CHARGE without an amount that refunded an overrun, the wrong price version after a
 * publication (two instances), absurd numbers priced, refusals that wrote rows, and ranked lists
 * sorted as text.
 */
import type { Gateway } from '../../src/bootstrap.js';
import { reconcile } from '../../src/ledger/reconcile.js';
import { createSimulator } from '../../src/simulator/simulator.js';
import { heldTask, imageBody, videoBody } from '../support/builders.js';
import {
  ADMIN,
  freshDatabase,
  gateway,
  graphql,
  http,
  pollTask,
  projectWithKey,
  sql,
  submitChat,
  submitGeneration,
  eventually,
} from '../support/harness.js';

const VENDOR_KEY = 'vk-edges-0123456789';
const month = () => {
  const now = new Date();
  return {
    from: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
    to: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
  };
};

describe('one gateway', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await gateway(await freshDatabase(), { SIMULATOR_DELAY_MS: '600000' });
  });
  afterAll(() => gw.close());

  test('an overrun resolved with CHARGE and no amount leaves the charge and every report unchanged', async () => {
    const { projectId, key } = await projectWithKey(gw);
    const res = await submitChat(
      gw,
      key,
      { model: 'gemini-3.8-flash', messages: [{ role: 'user', content: 'x' }], max_tokens: 16 },
      { 'x-spendgate-user': 'u-1', 'x-spendgate-tags': 'team=a' },
    );
    const taskId = String(res.body.data.taskId);
    await http(`${gw.simulatorUrl}/__sim/tasks/${taskId}/complete`, {
      body: { status: 'ready', usage: { promptTokenCount: 10, candidatesTokenCount: 16, thoughtsTokenCount: 40_000 } },
    });
    await pollTask(gw, key, taskId);
    const { from, to } = month();
    const reports = async () =>
      Promise.all([
        ...[['project', 'model', 'day'], ['apiKey'], ['user'], ['tag:team'], ['kind', 'family']].map((groupBy) =>
          graphql(
            gw,
            ADMIN,
            `
              query ($f: DateTime!, $t: DateTime!, $g: [String!]) {
                spendReport(from: $f, to: $t, groupBy: $g) {
                  keys
                  totals {
                    unit
                    amount
                  }
                  tasks
                }
              }
            `,
            { f: from, t: to, g: groupBy },
          ).then((r) => r.text),
        ),
        http(`${gw.url}/reports/spend.csv?from=${from}&to=${to}&groupBy=project,model,day`, { key: ADMIN }).then(
          (r) => r.text,
        ),
        http(`${gw.url}/reports/focus.csv?from=${from}&to=${to}`, { key: ADMIN }).then((r) => r.text),
        graphql(
          gw,
          ADMIN,
          `
            query ($p: ID!) {
              budgetStatus(projectId: $p) {
                spent
              }
              dashboard {
                monthToDate {
                  unit
                  amount
                }
              }
            }
          `,
          { p: projectId },
        ).then((r) => r.text),
      ]);
    const before = await reports();
    const task = (
      await graphql(
        gw,
        ADMIN,
        `
          query ($t: ID!) {
            task(taskId: $t) {
              overrun
              charge {
                amount
              }
            }
          }
        `,
        { t: taskId },
      )
    ).body.data.task;
    expect(task.overrun).not.toBeNull();
    const resolved = await graphql(
      gw,
      ADMIN,
      `
        mutation ($t: ID!) {
          resolveTask(taskId: $t, outcome: CHARGE, reason: "the vendor bills it") {
            needsReview
            net
            adjustments
            charge {
              amount
            }
            ledgerEntries {
              kind
            }
          }
        }
      `,
      { t: taskId },
    );
    expect(resolved.body.errors).toBeUndefined();
    expect(resolved.body.data.resolveTask).toMatchObject({
      needsReview: false,
      net: task.charge.amount,
      adjustments: '0',
      charge: { amount: task.charge.amount },
    });
    expect(resolved.body.data.resolveTask.ledgerEntries.map((e: { kind: string }) => e.kind)).toEqual([
      'hold',
      'release',
      'charge',
    ]);
    expect(await reports()).toEqual(before);
    expect(await reconcile(gw.db)).toEqual([]);
  });

  test('hostile numbers: a clear 4xx each, nothing written, reconcile clean', async () => {
    const { projectId, key } = await projectWithKey(gw);
    const held = await heldTask(gw, { projectId });
    await sql(gw, `UPDATE task SET status = 'unknown', needs_review = true WHERE id = $1`, [held.taskId]);
    const counts = () =>
      sql(
        gw,
        `SELECT (SELECT count(*) FROM task)::int AS tasks, (SELECT count(*) FROM ledger_entry)::int AS entries,
                                  (SELECT count(*) FROM budget)::int AS budgets, (SELECT count(*) FROM price_book_version)::int AS versions`,
      );
    const before = await counts();
    const raw = (path: string, body: string) =>
      http(`${gw.url}/api-platform/v1/${path}`, { key, raw: body, headers: { 'content-type': 'application/json' } });
    for (const [path, body, field] of [
      ['generations', '{"model":"wan2.7-video","prompt":"p","resolution":"720p","duration":1e300}', 'duration'],
      [
        'generations',
        '{"model":"wan2.7-video","prompt":"p","resolution":"720p","duration":9007199254740993}',
        'duration',
      ],
      ['generations', '{"model":"wan2.7-video","prompt":"p","resolution":"720p","duration":61}', 'duration'],
      ['generations', '{"model":"seedream-4.0","prompt":"p","n":9007199254740993}', 'n'],
      [
        'chat/completions',
        '{"model":"glm-5.3","messages":[{"role":"user","content":"x"}],"max_tokens":1e308}',
        'max_tokens',
      ],
      [
        'chat/completions',
        '{"model":"glm-5.3","messages":[{"role":"user","content":"x"}],"max_tokens":200001}',
        'max_tokens',
      ],
    ] as const) {
      const res = await raw(path, body);
      expect({ body, status: res.status, field: res.body.details?.problems?.[0]?.field }).toEqual({
        body,
        status: 400,
        field,
      });
    }
    const huge = '9'.repeat(140_000);
    const admin = (query: string, variables: Record<string, unknown>) => graphql(gw, ADMIN, query, variables);
    const ADJUST = `mutation($p: ID!, $a: Decimal!, $at: DateTime) { adjustLedger(projectId: $p, unit: USD, amount: $a, reason: "r", effectiveAt: $at) }`;
    const refusals = [
      await admin(
        `mutation($t: ID!, $a: Decimal) { resolveTask(taskId: $t, outcome: CHARGE, reason: "r", amount: $a) { status } }`,
        { t: `gw-${held.taskId}`, a: huge },
      ),
      await admin(ADJUST, { p: projectId, a: huge }),
      await admin(ADJUST, { p: projectId, a: `0.${'1'.repeat(60)}` }),
      await admin(ADJUST, { p: projectId, a: '1000000000000000000000' }),
      await admin(ADJUST, { p: projectId, a: '3.00', at: '1969-12-31T23:59:59Z' }),
      await admin(ADJUST, { p: projectId, a: '3.00', at: '0001-01-01T00:00:00Z' }),
      await admin(ADJUST, { p: projectId, a: '3.00', at: '9999-12-31T00:00:00Z' }),
      await admin(
        `mutation($p: ID!, $l: Decimal!) { setBudget(projectId: $p, unit: USD, limit: $l, period: LIFETIME, hard: true) }`,
        { p: projectId, l: huge },
      ),
      await admin(
        `mutation($r: String!, $at: DateTime) { publishPrices(effectiveAt: $at, rates: [{ model: "seedream-5.0", unit: USD, component: "image", key: "2K", rate: $r }]) }`,
        { r: '0.05', at: '9999-01-01T00:00:00Z' },
      ),
      await admin(
        `mutation($r: String!) { publishPrices(rates: [{ model: "seedream-5.0", unit: USD, component: "image", key: "2K", rate: $r }]) }`,
        { r: `0.${'0'.repeat(59)}5` },
      ),
      await admin(
        `mutation($r: String!, $at: DateTime) { publishPrices(effectiveAt: $at, rates: [{ model: "seedream-5.0", unit: USD, component: "image", key: "2K", rate: $r }]) }`,
        { r: '0.05', at: new Date(Date.now() - 1_000).toISOString() },
      ),
    ];
    for (const r of refusals) {
      expect(r.status).toBeLessThan(500);
      expect({
        code: r.body.errors?.[0]?.extensions?.code,
        message: (r.body.errors?.[0]?.message.length ?? 0) < 300,
      }).toEqual({ code: 'BAD_USER_INPUT', message: true });
    }
    expect(refusals[2]!.body.errors?.[0]?.message).toMatch(/more than 18 decimals/);
    expect(refusals[4]!.body.errors?.[0]?.message).toMatch(
      /^effectiveAt: 1969-12-31T23:59:59.000Z is outside 1970-01-01/,
    );
    expect(refusals[10]!.body.errors?.[0]?.message).toMatch(/^effectiveAt: .* is in the past/);
    expect(await counts()).toEqual(before);
    // The database holds the same line: an entry before the epoch is refused even by hand.
    await expect(
      sql(gw, `SELECT spendgate_adjust($1, 'USD', 3, 'by hand', NULL, '1969-12-31T23:59:59Z')`, [projectId]),
    ).rejects.toThrow(/ledger_entry_effective_in_epoch/);
    expect(await reconcile(gw.db)).toEqual([]);
  });

  test('300 refused requests from new end users leave no balance rows and no users', async () => {
    const { projectId, key } = await projectWithKey(gw);
    const set = (scope: string, limit: string, period = 'MONTHLY') =>
      graphql(
        gw,
        ADMIN,
        `mutation($p: ID!, $l: Decimal!) { setBudget(projectId: $p, unit: USD, limit: $l, period: ${period}, hard: true, scope: ${scope}) }`,
        { p: projectId, l: limit },
      ).then((r) => r.body.data.setBudget as string);
    await set('EACH_USER', '20');
    await set('EACH_USER', '5', 'DAILY');
    // The project's budget checked last (budgets are checked in id order): the refusing one.
    let project = await set('PROJECT', '0.01');
    while (
      (
        await sql(gw, `SELECT id FROM budget WHERE project_id = $1 AND deleted_at IS NULL ORDER BY id DESC LIMIT 1`, [
          projectId,
        ])
      )[0]!.id !== project
    ) {
      await graphql(
        gw,
        ADMIN,
        `
          mutation ($b: ID!) {
            deleteBudget(budgetId: $b)
          }
        `,
        { b: project },
      );
      project = await set('PROJECT', '0.01');
    }
    const periodsBefore = await sql(gw, `SELECT count(*)::int AS n FROM budget_period`);
    const results = await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        submitGeneration(gw, key, imageBody(), { 'x-spendgate-user': `new-user-${i}` }),
      ),
    );
    expect(new Set(results.map((r) => r.status))).toEqual(new Set([402]));
    expect(await sql(gw, `SELECT count(*)::int AS n FROM budget_period`)).toEqual(periodsBefore);
    expect(await sql(gw, `SELECT count(*)::int AS n FROM task WHERE project_id = $1`, [projectId])).toEqual([{ n: 0 }]);
    const status = await graphql(
      gw,
      ADMIN,
      `
        query ($p: ID!) {
          budgetStatus(projectId: $p) {
            scope
            users(first: 10) {
              edges {
                node {
                  user
                }
              }
            }
          }
        }
      `,
      { p: projectId },
    );
    for (const b of status.body.data.budgetStatus as unknown as Array<{ users: { edges: unknown[] } }>)
      expect(b.users.edges).toEqual([]);
    expect(await reconcile(gw.db)).toEqual([]);
  });

  test('ranked lists are in numeric order: 199.55, 14.87, 2.789 (never as text)', async () => {
    const amounts = ['2.789', '14.87', '199.55'];
    const projects = await Promise.all(amounts.map(() => projectWithKey(gw)));
    const models = ['seedream-4.0', 'nano-banana-pro', 'sora-2-pro'];
    const adjust = (p: string, a: string, t?: string) =>
      graphql(
        gw,
        ADMIN,
        `
          mutation ($p: ID!, $a: Decimal!, $t: ID) {
            adjustLedger(projectId: $p, unit: USD, amount: $a, reason: "order", taskId: $t)
          }
        `,
        { p, a, t },
      ).then((r) => expect(r.body.errors).toBeUndefined());
    for (const [i, amount] of amounts.entries()) {
      const p = projects[i]!.projectId;
      const task = await heldTask(gw, {
        projectId: p,
        body: models[i] === 'sora-2-pro' ? videoBody() : imageBody({ model: models[i] }),
      });
      await adjust(p, amount, `gw-${task.taskId}`);
    }
    const ids = projects.map((p) => p.projectId);
    const dashboard = await graphql(
      gw,
      ADMIN,
      `
        {
          dashboard {
            topModels {
              key
              unit
              amount
            }
            topProjects {
              key
              amount
            }
          }
        }
      `,
    );
    const mine = (rows: Array<{ key: string; amount: string }>, keys: string[]) =>
      rows.filter((r) => keys.includes(r.key)).map((r) => r.amount);
    expect(mine(dashboard.body.data.dashboard.topModels, models)).toEqual(['199.55', '14.87', '2.789']);
    const names = (await sql(gw, `SELECT name FROM project WHERE id = ANY($1::uuid[])`, [ids])).map(
      (r) => r.name as string,
    );
    expect(mine(dashboard.body.data.dashboard.topProjects, names)).toEqual(['199.55', '14.87', '2.789']);
    const { from, to } = month();
    for (const groupBy of [['project'], ['model']]) {
      const report = await graphql(
        gw,
        ADMIN,
        `
          query ($f: DateTime!, $t: DateTime!, $g: [String!], $p: [ID!]) {
            spendReport(from: $f, to: $t, groupBy: $g, projectIds: $p, unit: USD, orderBy: AMOUNT_DESC) {
              totals {
                amount
              }
            }
          }
        `,
        { f: from, t: to, g: groupBy, p: ids },
      );
      expect(
        report.body.data.spendReport.map((r: { totals: Array<{ amount: string }> }) => r.totals[0]!.amount),
      ).toEqual(['199.55', '14.87', '2.789']);
    }
  });
});

describe('a price switch while 300 submissions alternate between two instances', () => {
  const sim = createSimulator({ apiKey: VENDOR_KEY, delayMs: 300 });
  let a: Gateway;
  let b: Gateway;
  beforeAll(async () => {
    const simUrl = await sim.app.listen({ port: 0, host: '127.0.0.1' });
    const url = await freshDatabase();
    const env = { UPSTREAM_BASE_URL: simUrl, UPSTREAM_API_KEY: VENDOR_KEY, POLL_MAX_PER_SECOND: '1000' };
    a = await gateway(url, { ...env, POLLER_ENABLED: 'false' }); // B's poller settles every task, A's too
    b = await gateway(url, env);
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
    await sim.app.close();
  });

  test('every task is held and charged with the version recorded on it; none accepted under a superseded version; no false overrun', async () => {
    const { projectId, key } = await projectWithKey(a);
    await graphql(
      a,
      ADMIN,
      `
        mutation ($p: ID!) {
          setBudget(projectId: $p, unit: USD, limit: "100", period: MONTHLY, hard: true)
        }
      `,
      { p: projectId },
    );
    const submissions: Array<Promise<unknown>> = [];
    let published: number | undefined;
    for (let i = 0; i < 300; i++) {
      submissions.push(
        submitGeneration(i % 2 ? a : b, key, imageBody({ resolution: '1K' })).then((r) => expect(r.status).toBe(200)),
      );
      if (i === 150) {
        const res = await graphql(
          a,
          ADMIN,
          `
            mutation {
              publishPrices(
                note: "up"
                rates: [{ model: "seedream-4.0", unit: USD, component: "image", key: "1K", rate: "0.09" }]
              )
            }
          `,
        );
        expect(res.body.errors).toBeUndefined();
        published = res.body.data.publishPrices;
      }
      if (i % 10 === 0) await new Promise((r) => setTimeout(r, 5));
    }
    await Promise.all(submissions);
    await eventually(
      async () =>
        (
          await sql(a, `SELECT count(*)::int AS n FROM task WHERE project_id = $1 AND settled_at IS NULL`, [projectId])
        )[0]!.n === 0,
      30_000,
      200,
    );
    const tasks = await sql(
      a,
      `SELECT t.price_book_version AS v, t.hold_amount::text AS hold, t.charge_amount::text AS charge, t.overrun,
                                       (SELECT max(p.version) FROM price_book_version p WHERE p.effective_at <= t.accepted_at) AS in_force
                                FROM task t WHERE t.project_id = $1`,
      [projectId],
    );
    expect(tasks).toHaveLength(300);
    const rate = (v: number) => (v === published ? '0.09' : '0.04');
    for (const t of tasks)
      expect(t).toEqual({
        v: t.in_force,
        hold: rate(t.v as number),
        charge: rate(t.v as number),
        overrun: null,
        in_force: t.in_force,
      });
    expect(new Set(tasks.map((t) => t.v))).toEqual(new Set([1, published]));
    expect(await reconcile(a.db)).toEqual([]);
  }, 60_000);
});
