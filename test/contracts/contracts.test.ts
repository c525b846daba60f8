/**
 * Contract terms (decisions §19) through the running gateway, GraphQL and the FOCUS export, each
 * figure computed by hand from upstream-api.md's list rates: a discount off a family, a net rate of
 * one model's line with the 272K tier chosen by the list rule first, a contract published between
 * tasks (earlier tasks keep their version, settled or not), and a month reopened after a newer contract.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import type { Gateway } from '../../src/bootstrap.js';
import { acceptedTask, settleReady } from '../support/builders.js';
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
} from '../support/harness.js';

let gw: Gateway;
let key: string;
let projectId: string;
const TASK = `query($id: ID!) { task(taskId: $id) { priceBookVersion acceptedAt estimate { amount }
  charge { amount tier lines { component quantity rate amount listRate listAmount } }
  ledgerEntries { kind amount } } }`;

beforeAll(async () => {
  gw = await gateway(await freshDatabase(), { SIMULATOR_DELAY_MS: '600000', POLLER_ENABLED: 'false' });
  ({ key, projectId } = await projectWithKey(gw));
});
afterAll(() => gw.close());

async function publish(terms: unknown[], note = 'contract') {
  const res = await graphql(
    gw,
    ADMIN,
    `
      mutation ($t: [ContractTermInput!]!, $n: String) {
        publishContract(terms: $t, note: $n)
      }
    `,
    { t: terms, n: note },
  );
  expect(res.body.errors).toBeUndefined();
  return res.body.data!.publishContract as number;
}

async function settled(res: { body: { data: { taskId: number } } }, usage?: unknown) {
  const id = res.body.data.taskId;
  const done = await http(`${gw.simulatorUrl}/__sim/tasks/${id}/complete`, {
    body: usage === undefined ? { status: 'ready' } : { status: 'ready', usage },
  });
  expect(done.status).toBe(200);
  await pollTask(gw, key, id);
  return { id: String(id), ...(await graphql(gw, ADMIN, TASK, { id: String(id) })).body.data!.task };
}

const chat = (model: string) => ({ model, messages: [{ role: 'user', content: 'hello' }], max_tokens: 100 });

test('22 % off a family: every line of gpt-5.6-luna at 78 % of its list rate; budgets count the contracted charge', async () => {
  const budget = await graphql(
    gw,
    ADMIN,
    `
      mutation ($p: ID!) {
        setBudget(projectId: $p, unit: CREDITS, limit: "1000000", period: MONTHLY, hard: true)
      }
    `,
    { p: projectId },
  );
  expect(budget.body.errors).toBeUndefined();
  const version = await publish([{ scope: 'family', value: 'gpt-5.6', unit: 'CREDITS', discountPercent: '22' }]);
  const task = await settled(await submitChat(gw, key, chat('gpt-5.6-luna')), {
    prompt_tokens: 1000,
    completion_tokens: 500,
  });
  expect(task.priceBookVersion).toBe(version);
  // list: 1000 × 147.784 / 1M + 500 × 886.704 / 1M = 0.147784 + 0.443352 = 0.591136
  // contracted: 147.784 × 0.78 = 115.27152 and 886.704 × 0.78 = 691.62912 → 0.11527152 + 0.34581456
  expect(task.charge).toEqual({
    amount: '0.46108608',
    tier: 'base',
    lines: [
      {
        component: 'input',
        quantity: '1000',
        rate: '115.27152',
        amount: '0.11527152',
        listRate: '147.784',
        listAmount: '0.147784',
      },
      {
        component: 'output',
        quantity: '500',
        rate: '691.62912',
        amount: '0.34581456',
        listRate: '886.704',
        listAmount: '0.443352',
      },
    ],
  });
  expect(task.ledgerEntries.find((e: { kind: string }) => e.kind === 'charge')?.amount).toBe('0.46108608');
  // The budget counts what is owed, never the list amount (and nothing stays held).
  const spent = await sql(
    gw,
    `SELECT p.spent::text AS spent, p.held = 0 AS released FROM budget_period p JOIN budget b ON b.id = p.budget_id
     WHERE b.project_id = $1 AND b.unit = 'CREDITS'`,
    [projectId],
  );
  expect(spent).toEqual([{ spent: '0.46108608', released: true }]);
});

test('a net rate of one line and tier: the 272K rule picks the list tier, then the contract prices it', async () => {
  await publish([
    { scope: 'model', value: 'gpt-5.6-terra', unit: 'CREDITS', component: 'output', tier: 'base', netRate: '7000' },
    { scope: 'family', value: 'gpt-5.6', unit: 'CREDITS', discountPercent: '10' },
  ]);
  const base = await settled(await submitChat(gw, key, chat('gpt-5.6-terra')), {
    prompt_tokens: 1000,
    completion_tokens: 1000,
  });
  // base tier: input 1477.84 × 0.9 = 1330.056 (the family's discount); output the net rate 7000
  // → 0.001 × 1330.056 + 0.001 × 7000 = 1.330056 + 7 = 8.330056 (list 1.47784 + 8.86704)
  expect(base.charge.tier).toBe('base');
  expect(base.charge.amount).toBe('8.330056');
  expect(base.charge.lines.map((l: { rate: string; listRate?: string | null }) => [l.rate, l.listRate])).toEqual([
    ['1330.056', '1477.84'],
    ['7000', '8867.04'],
  ]);
  const long = await settled(await submitChat(gw, key, chat('gpt-5.6-terra')), {
    prompt_tokens: 300_000,
    completion_tokens: 1000,
  });
  // long tier (300,000 > 272,000 input tokens): no net rate for it, so the family's 10 % off the long rates:
  // 300,000 × 2955.68 × 0.9 / 1M + 1000 × 13300.56 × 0.9 / 1M = 798.0336 + 11.970504 = 810.004104 (list 900.00456)
  expect(long.charge.tier).toBe('long');
  expect(long.charge.amount).toBe('810.004104');
  expect(long.charge.lines.map((l: { listAmount?: string | null }) => l.listAmount)).toEqual(['886.704', '13.30056']);

  // A refund of 10 credits on the long task: no unit price explains it, so it is a row of its own.
  const refund = await graphql(
    gw,
    ADMIN,
    `
      mutation ($p: ID!, $t: ID) {
        adjustLedger(projectId: $p, unit: CREDITS, amount: "-10", reason: "goodwill", taskId: $t)
      }
    `,
    { p: projectId, t: long.id },
  );
  expect(refund.body.errors).toBeUndefined();

  // FOCUS at the price list's grain: a row per line component and tier, its unit prices the
  // list and contracted rates (credits per 1M tokens; CREDITS_PER_USD unset, so the costs are 0
  // and the exact credits are in x_Credits).
  const day = new Date().toISOString().slice(0, 10);
  const csv = (await http(`${gw.url}/reports/focus.csv?from=${day}T00:00:00Z&to=2100-01-01T00:00:00Z`, { key: ADMIN }))
    .text;
  const [header, ...rows] = parse(csv) as string[][];
  const col = (name: string) => header!.indexOf(name);
  const terra = rows
    .filter((r) => r[col('ServiceName')] === 'gpt-5.6-terra')
    .map((r) => ['ChargeCategory', 'SkuPriceId', 'PricingQuantity', 'PricingUnit', 'x_Credits'].map((c) => r[col(c)]));
  const v = base.priceBookVersion;
  expect(terra).toEqual([
    ['Usage', `gpt-5.6-terra/input/base@v${v}`, '0.001', '1000000 Tokens', '1.330056'],
    ['Usage', `gpt-5.6-terra/input/long@v${v}`, '0.3', '1000000 Tokens', '798.0336'],
    ['Usage', `gpt-5.6-terra/output/base@v${v}`, '0.001', '1000000 Tokens', '7'],
    ['Usage', `gpt-5.6-terra/output/long@v${v}`, '0.001', '1000000 Tokens', '11.970504'],
    ['Credit', '', '', '', '-10'],
  ]);
  // With a credit price, the unit prices are the rates in USD: list beside contracted.
  const priced = await gateway(gw.databaseUrl, {
    SIMULATOR_DELAY_MS: '600000',
    POLLER_ENABLED: 'false',
    CREDITS_PER_USD: '2',
  });
  try {
    const usd = parse(
      (await http(`${priced.url}/reports/focus.csv?from=${day}T00:00:00Z&to=2100-01-01T00:00:00Z`, { key: ADMIN }))
        .text,
    ) as string[][];
    const units = usd
      .filter((r) => r[col('ServiceName')] === 'gpt-5.6-terra' && r[col('ChargeCategory')] === 'Usage')
      .map((r) => ['ListUnitPrice', 'ContractedUnitPrice', 'ListCost', 'ContractedCost'].map((c) => r[col(c)]));
    expect(units).toEqual([
      ['738.92', '665.028', '0.73892', '0.665028'], // 1477.84 / 2 list, 90 % of it contracted
      ['1477.84', '1330.056', '443.352', '399.0168'], // the long tier, 300,000 tokens
      ['4433.52', '3500', '4.43352', '3.5'], // the net rate 7000 / 2
      ['6650.28', '5985.252', '6.65028', '5.985252'],
    ]);
  } finally {
    await priced.close();
  }
});

test('a contract published between tasks: earlier tasks keep their version, settled or not; FOCUS shows list beside contracted', async () => {
  const image = { model: 'seedream-4.0', prompt: 'a fox', resolution: '4K' };
  const settledBefore = await settled(await submitGeneration(gw, key, image));
  const openBefore = await submitGeneration(gw, key, image);
  const version = await publish([{ scope: 'kind', value: 'image', unit: 'USD', discountPercent: '50' }], 'images half');
  const after = await settled(await submitGeneration(gw, key, image));
  const lateBefore = await settled(openBefore);

  expect(settledBefore.charge).toMatchObject({ amount: '0.07', lines: [{ rate: '0.07', listRate: null }] });
  expect(lateBefore.priceBookVersion).toBeLessThan(version);
  expect(lateBefore.charge.amount).toBe('0.07');
  expect(after.priceBookVersion).toBe(version);
  expect(after.estimate.amount).toBe('0.035');
  expect(after.charge).toMatchObject({
    amount: '0.035',
    lines: [{ rate: '0.035', listRate: '0.07', listAmount: '0.07' }],
  });
  // The task settled before the contract is as it was.
  const again = (await graphql(gw, ADMIN, TASK, { id: settledBefore.id })).body.data!.task;
  expect(again.charge).toEqual(settledBefore.charge);

  // The vendor bills what is owed: its statement reconciles against the contracted charge, the list one differs.
  const statement = (rows: Array<[{ id: string; acceptedAt: string }, string]>) =>
    fetch(`${gw.url}/reports/vendor-statements`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'text/csv' },
      body: `task_id,model,time,amount,unit\n${rows.map(([t, a]) => `${t.id},seedream-4.0,${t.acceptedAt},${a},USD`).join('\n')}\n`,
    }).then((r) => r.json() as Promise<{ classes: Array<{ class: string; count: number }> }>);
  const billed = await statement([
    [settledBefore, '0.07'],
    [after, '0.035'],
  ]);
  // (the statement's period holds the file's tasks only: the others of these days are ours_not_billed)
  const count = (r: typeof billed, c: string) =>
    r.classes.filter((x) => x.class === c).reduce((n, x) => n + x.count, 0);
  expect([count(billed, 'matched'), count(billed, 'amount_differs')]).toEqual([2, 0]);
  const atList = await statement([[lateBefore, '0.07']]); // accepted under the list prices: billed at them
  expect([count(atList, 'matched'), count(atList, 'amount_differs')]).toEqual([1, 0]);
  const another = await settled(await submitGeneration(gw, key, image)); // under the contract: 0.035
  const overBilled = await statement([[another, '0.07']]);
  expect([count(overBilled, 'matched'), count(overBilled, 'amount_differs')]).toEqual([0, 1]);

  const day = new Date().toISOString().slice(0, 10);
  const csv = (await http(`${gw.url}/reports/focus.csv?from=${day}T00:00:00Z&to=2100-01-01T00:00:00Z`, { key: ADMIN }))
    .text;
  const [header, ...rows] = parse(csv) as string[][];
  const col = (name: string) => header!.indexOf(name);
  const images = rows.filter((r) => r[col('ServiceName')] === 'seedream-4.0');
  const byVersion = Object.fromEntries(
    images.map((r) => [
      r[col('x_PriceBookVersion')],
      [r[col('ListCost')], r[col('ContractedCost')], r[col('BilledCost')]],
    ]),
  );
  expect(byVersion[String(version)]).toEqual(['0.14', '0.07', '0.07']); // two images at 0.07 list, 0.035 owed
  expect(byVersion[String(lateBefore.priceBookVersion)]).toEqual(['0.14', '0.14', '0.14']);
});

test('a month reopened after a newer contract keeps its terms: its late task is charged by its own version', async () => {
  const version = await publish(
    [{ scope: 'kind', value: 'image', unit: 'USD', discountPercent: '50' }],
    'october terms',
  );
  const body = { model: 'seedream-4.0', prompt: 'a fox', resolution: '4K' };
  const at = new Date(Date.UTC(2026, 9, 20, 12));
  const first = await acceptedTask(gw, { projectId, upstreamTaskId: '990001', body, acceptedAt: at });
  const late = await acceptedTask(gw, { projectId, upstreamTaskId: '990002', body, acceptedAt: at });
  const settle = (upstream: string) => settleReady(gw, projectId, upstream);
  expect(await settle('990001')).toBe(true);
  const close = () =>
    graphql(
      gw,
      ADMIN,
      `
        mutation {
          closeMonth(month: "2026-10") {
            month
          }
        }
      `,
    );
  expect((await close()).body.errors).toBeUndefined();
  await publish([], 'contract ended');
  const reopened = await graphql(
    gw,
    ADMIN,
    `
      mutation {
        reopenMonth(month: "2026-10", reason: "late task")
      }
    `,
  );
  expect(reopened.body.data).toEqual({ reopenMonth: true });
  expect(await settle('990002')).toBe(true);
  expect([first.taskId, late.taskId]).toHaveLength(2);
  for (const id of ['990001', '990002']) {
    const t = (await graphql(gw, ADMIN, TASK, { id })).body.data!.task;
    expect(t.priceBookVersion).toBe(version);
    expect(t.charge).toMatchObject({ amount: '0.035', lines: [{ listAmount: '0.07' }] });
  }
  // Closed again: the statement shows the month at list prices beside what is owed (CSV and PDF).
  expect((await close()).body.errors).toBeUndefined();
  const paths = (
    await graphql(
      gw,
      ADMIN,
      `
        query ($p: ID!) {
          statement(projectId: $p, month: "2026-10") {
            csvPath
            pdfPath
          }
        }
      `,
      {
        p: projectId,
      },
    )
  ).body.data!.statement as unknown as { csvPath: string; pdfPath: string };
  const csv = (await http(`${gw.url}${paths.csvPath}`, { key: ADMIN })).text;
  // (the task still open at the first close was carried into November, where its charge posts: October holds one)
  expect(csv).toContain('model,seedream-4.0,image,USD,0.035,1');
  expect(csv).toContain('model at list prices,seedream-4.0,image,USD,0.07,1');
  const pdf = await fetch(`${gw.url}${paths.pdfPath}`, { headers: { authorization: `Bearer ${ADMIN}` } });
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'statement-')), 'october.pdf');
  writeFileSync(file, Buffer.from(await pdf.arrayBuffer()));
  const text = execFileSync('pdftotext', ['-layout', file, '-'], { encoding: 'utf8' });
  expect(text).toMatch(/At list prices\s+Amount owed/);
  expect(text).toMatch(/seedream-4\.0\s+image\s+USD\s+0\.07\s+0\.035\s+1/);
});

test('a bad contract is a 400 naming the term, and nothing is published; a publication is attributed in the audit trail', async () => {
  const versions = async () =>
    (await graphql(gw, ADMIN, '{ priceBookVersions { version } }')).body.data!.priceBookVersions.length;
  const count = await versions();
  const refused: Array<[unknown[], RegExp]> = [
    [
      [{ scope: 'family', value: 'gpt-5.6', unit: 'CREDITS', discountPercent: '120' }],
      /terms\[0\]\.discountPercent: must be at most 100/,
    ],
    [[{ scope: 'family', value: 'gpt-5.6', unit: 'CREDITS', discountPercent: '-1' }], /must not be negative/],
    [[{ scope: 'family', value: 'gpt-9', unit: 'CREDITS', discountPercent: '5' }], /not a model family/],
    [
      [{ scope: 'family', value: 'gpt-5.6', unit: 'USD', discountPercent: '5' }],
      /terms\[0\]\.unit: gpt-5.6 is priced in CREDITS/,
    ],
    [
      [{ scope: 'family', value: 'veo', unit: 'USD', netRate: '0.1', component: 'video_seconds:720p' }],
      /a net rate is of one model/,
    ],
    [
      [{ scope: 'model', value: 'veo-3.1', unit: 'USD', netRate: '0.1', component: 'images:2K' }],
      /component: must be one of video_seconds:1080p, video_seconds:4K, video_seconds:720p$/,
    ],
    [
      [
        {
          scope: 'model',
          value: 'veo-3.1',
          unit: 'USD',
          netRate: '0.1',
          component: 'video_seconds:720p',
          tier: 'base',
        },
      ],
      /only token rates have tiers/,
    ],
    [
      [{ scope: 'model', value: 'glm-5.3', unit: 'CREDITS', netRate: '1', discountPercent: '1', component: 'input' }],
      /either discountPercent or netRate/,
    ],
    [[{ scope: 'kind', value: 'audio', unit: 'USD', discountPercent: '5' }], /a kind is chat, video or image/],
    [
      [
        { scope: 'kind', value: 'image', unit: 'USD', discountPercent: '5' },
        { scope: 'kind', value: 'image', unit: 'USD', discountPercent: '6' },
      ],
      /terms\[1\]: the contract already has a term/,
    ],
    [[{ scope: 'kind', value: 'image', unit: 'USD', discountPercent: '1e3' }], /is not a decimal/],
  ];
  for (const [terms, message] of refused) {
    const res = await graphql(
      gw,
      ADMIN,
      `
        mutation ($t: [ContractTermInput!]!) {
          publishContract(terms: $t)
        }
      `,
      { t: terms },
    );
    expect(res.body.errors?.[0]).toMatchObject({
      message: expect.stringMatching(message),
      extensions: { code: 'BAD_USER_INPUT' },
    });
  }
  const past = await graphql(
    gw,
    ADMIN,
    `
      mutation {
        publishContract(
          effectiveAt: "2026-01-01T00:00:00Z"
          terms: [{ scope: "kind", value: "image", unit: USD, discountPercent: "5" }]
        )
      }
    `,
  );
  expect(past.body.errors?.[0]?.message).toMatch(/effectiveAt: .* is in the past/);
  expect(await versions()).toBe(count);

  const version = await publish(
    [{ scope: 'model', value: 'veo-3.1', unit: 'USD', netRate: '0.3', component: 'video_seconds:4K' }],
    'veo deal',
  );
  const book = (
    await graphql(
      gw,
      ADMIN,
      `
        query ($v: Int) {
          priceBook(version: $v) {
            note
            contract {
              scope
              value
              unit
              netRate
              component
              tier
              discountPercent
            }
          }
        }
      `,
      { v: version },
    )
  ).body.data!.priceBook;
  expect(book).toEqual({
    note: 'veo deal',
    contract: [
      {
        scope: 'model',
        value: 'veo-3.1',
        unit: 'USD',
        netRate: '0.3',
        component: 'video_seconds:4K',
        tier: null,
        discountPercent: null,
      },
    ],
  });
  const audit = await sql(
    gw,
    `SELECT action, target_id, actor_kind FROM audit_record WHERE action = 'contract.publish' ORDER BY seq DESC LIMIT 1`,
  );
  expect(audit).toMatchObject([
    { action: 'contract.publish', target_id: String(version), actor_kind: expect.any(String) },
  ]);
});

test("the migration's back-fill of the SKU roll-up gives what settlement wrote, row for row", async () => {
  // Every task settled above (two versions, two tiers, a late task of a reopened month) wrote its
  // lines into spend_rollup_sku; the migration rebuilds that table from the charge lines of a
  // database that had none.
  const file = readFileSync(
    path.join(
      'prisma',
      'migrations',
      readdirSync('prisma/migrations').find((d) => d.endsWith('_sku_rollup'))!,
      'migration.sql',
    ),
    'utf8',
  );
  const backfill = file.slice(file.indexOf('INSERT INTO spend_rollup_sku'));
  const ROWS = `SELECT period::text, project_id::text, key_prefix, model, unit::text, price_book_version, component, tier,
                       rate::text, per::text, list_rate::text, lines, quantity::text, amount::text, list_amount::text
                FROM spend_rollup_sku ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9`;
  const written = await sql(gw, ROWS);
  expect(written.length).toBeGreaterThanOrEqual(8);
  expect(written.some((r) => r.period !== new Date().toISOString().slice(0, 10))).toBe(true); // October's late task
  await sql(gw, 'DELETE FROM spend_rollup_sku');
  await sql(gw, backfill);
  expect(await sql(gw, ROWS)).toEqual(written);
});
