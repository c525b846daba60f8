/**
 * The vendor's statement (decisions §14) against the ledger, on real PostgreSQL over real HTTP: 50,000
 * settled tasks and a statement with 37 injected discrepancies of each class finds exactly those,
 * with the exact differences; importing it again changes nothing; accepting every "amount differs"
 * makes ledger and statement agree to the last decimal, reconcile clean. Hostile statements are a
 * clear 400 or read correctly, never a 500, never a partial import.
 *
 * The 50,000 tasks are written in bulk, as settlement leaves them (task, hold, release and charge
 * entries), to keep the suite fast; the statement path under test is the real one.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import type { Gateway } from '../../src/bootstrap.js';
import { reconcile } from '../../src/ledger/reconcile.js';
import { Decimal } from '../../src/pricing/money.js';
import {
  ADMIN,
  eventually,
  freshDatabase,
  gateway,
  graphql,
  http,
  projectWithKey,
  sql,
  submitGeneration,
} from '../support/harness.js';
import { accept, postStatement } from '../support/statements.js';

const run = promisify(execFile);

const N = 50_000;
const K = 37;
const DAY0 = Date.UTC(2026, 10, 2);

let gw: Gateway;
let projectId: string;
interface Task {
  id: string;
  vendor: string;
  model: string;
  at: string;
  unit: string;
  amount: string;
}
let tasks: Task[];

const post = (csv: string | Readable, mapping?: unknown) => postStatement(gw, csv, mapping);

const line = (t: Pick<Task, 'vendor' | 'model' | 'at' | 'amount' | 'unit'>) =>
  `${t.vendor},${t.model},${t.at},${t.amount},${t.unit}`;

beforeAll(async () => {
  gw = await gateway(await freshDatabase(), { POLLER_ENABLED: 'false', EARLY_WARNING_MS: '0', LEDGER_SEAL_MS: '0' });
  projectId = (await projectWithKey(gw, 'vendor-recon')).projectId;
  // 50,000 settled tasks over 10 days, images (USD) and chats (credits), each held, released and charged.
  await gw.db.query(
    `WITH t AS (
       INSERT INTO task (project_id, model, family, kind, unit, status, upstream_id, upstream_task_id, price_basis, price_book_version, exactness,
                         estimate_amount, hold_amount, charge_amount, charge_exactness, accepted_at, settled_at, updated_at)
       SELECT $1, CASE WHEN g % 3 = 0 THEN 'glm-5.3' ELSE 'seedream-4.0' END, CASE WHEN g % 3 = 0 THEN 'glm' ELSE 'seedream' END,
              CASE WHEN g % 3 = 0 THEN 'chat' ELSE 'image' END, CASE WHEN g % 3 = 0 THEN 'CREDITS' ELSE 'USD' END::"Unit", 'ready',
              'vd_' || (7000000 + g), 7000000 + g, '{}', 1, 'EXACT',
              CASE WHEN g % 3 = 0 THEN 12.5 ELSE 0.04 END, CASE WHEN g % 3 = 0 THEN 12.5 ELSE 0.04 END,
              CASE WHEN g % 3 = 0 THEN 10 + (g % 7) * 0.125 ELSE 0.04 END, 'EXACT',
              $2::timestamptz + make_interval(secs => g * 17 % 864000), $2::timestamptz + make_interval(secs => g * 17 % 864000 + 5), now()
       FROM generate_series(1, $3) g RETURNING id, project_id, unit, hold_amount, charge_amount, accepted_at, upstream_task_id),
     -- the vendor's ids, unique across months, as recording an acceptance writes them
     k AS (INSERT INTO task_upstream (upstream_task_id, task_id, project_id) SELECT upstream_task_id, id, project_id FROM t)
     INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at)
     SELECT project_id, id, k.kind::"LedgerKind", unit, CASE k.kind WHEN 'charge' THEN charge_amount ELSE hold_amount END, accepted_at
     FROM t, (VALUES ('hold'), ('release'), ('charge')) k(kind)`,
    [projectId, new Date(DAY0), N],
  );
  tasks = (await sql(
    gw,
    `SELECT id::text, upstream_task_id::text AS vendor, model, to_char(accepted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS at, unit::text, charge_amount::text AS amount FROM task ORDER BY id`,
  )) as unknown as Task[];
}, 120_000);
afterAll(() => gw.close());

test('50,000 tasks, 37 discrepancies of each class: exactly those found with their differences; the same statement again changes nothing; accepting makes both sides agree', async () => {
  // Held tasks the statement bills (pending), and the statement itself with its injected faults.
  const held = await sql(
    gw,
    `WITH t AS (
       INSERT INTO task (project_id, model, family, kind, unit, status, upstream_task_id, price_basis, price_book_version, exactness, estimate_amount, hold_amount, accepted_at)
       SELECT $1, 'seedream-4.0', 'seedream', 'image', 'USD', 'processing', 8000000 + g, '{}', 1, 'EXACT', 0.04, 0, $2::timestamptz + make_interval(hours => g) FROM generate_series(1, $3) g
       RETURNING id, project_id, upstream_task_id),
     k AS (INSERT INTO task_upstream (upstream_task_id, task_id, project_id) SELECT upstream_task_id, id, project_id FROM t)
     SELECT upstream_task_id::text AS vendor FROM t`,
    [projectId, new Date(DAY0), K],
  );
  const lines: string[] = [];
  const differs = new Map<string, string>();
  const notBilled = new Set<string>();
  const dup = new Set<string>();
  for (const [i, t] of tasks.entries()) {
    if (i % 1000 === 7 && notBilled.size < K) {
      notBilled.add(t.vendor);
      continue;
    }
    if (i % 1000 === 11 && differs.size < K) {
      const theirs = new Decimal(t.amount).plus(i % 2 ? '0.013' : '-0.5').toFixed();
      differs.set(t.vendor, new Decimal(theirs).minus(t.amount).toFixed());
      lines.push(line({ ...t, amount: theirs }));
      continue;
    }
    lines.push(line(t));
    if (i % 1000 === 13 && dup.size < K) {
      dup.add(t.vendor);
      lines.push(line(t));
    }
  }
  for (let i = 0; i < K; i++) lines.push(`${9000000 + i},seedream-4.0,2026-11-03T10:00:00Z,0.04,USD`); // billed, never ours
  for (const h of held) lines.push(`${h.vendor},seedream-4.0,2026-11-04T10:00:00Z,0.04,USD`);
  const csv = `task_id,model,time,amount,unit\n${lines.join('\n')}\n`;

  const first = await post(csv);
  expect(first.status).toBe(201);
  const id = first.body.id;
  const count = (c: string) => first.body.classes.filter((x) => x.class === c).reduce((n, x) => n + x.count, 0);
  expect({
    differs: count('amount_differs'),
    notOurs: count('billed_not_ours'),
    notBilled: count('ours_not_billed'),
    pending: count('pending'),
  }).toEqual({ differs: K, notOurs: K, notBilled: K, pending: K });
  expect(count('duplicate')).toBe(2 * K); // two lines each
  const items = await sql(
    gw,
    `SELECT class, vendor_task_id::text AS vendor, difference::text AS difference FROM vendor_recon_item WHERE statement_id = $1`,
    [id],
  );
  expect(
    items
      .filter((i) => i.class === 'duplicate')
      .map((i) => i.vendor)
      .sort(),
  ).toEqual([...dup].sort());
  expect(
    items
      .filter((i) => i.class === 'ours_not_billed')
      .map((i) => i.vendor)
      .sort(),
  ).toEqual([...notBilled].sort());
  const diffs = items.filter((i) => i.class === 'amount_differs');
  expect(diffs).toHaveLength(K);
  for (const d of diffs) expect(new Decimal(d.difference as string).eq(differs.get(d.vendor as string)!)).toBe(true);
  expect((await sql(gw, `SELECT count(*)::int AS n FROM task WHERE needs_review`))[0]!.n).toBe(2 * K); // differs + pending

  // The same file again: the same statement, nothing new. The same rows in another file: all repeated.
  const again = await post(csv);
  expect([again.status, again.body.id, again.body.created]).toEqual([200, id, false]);
  const reordered = await post(`task_id,model,time,amount,unit\r\n${lines.join('\r\n')}\r\n`);
  expect(reordered.status).toBe(201);
  expect(reordered.body.repeated).toBe(lines.length);
  expect(
    (await sql(gw, `SELECT count(*)::int AS n FROM vendor_recon_item WHERE statement_id = $1`, [reordered.body.id]))[0]!
      .n,
  ).toBe(0);

  // Accept every amount that differs (through GraphQL, audited): the ledger now says what the vendor billed.
  const open = (
    await graphql(
      gw,
      ADMIN,
      `
        query ($r: ID!) {
          vendorDifferences(reconciliationId: $r, classes: ["amount_differs"], first: 100) {
            edges {
              node {
                id
                difference
              }
            }
          }
        }
      `,
      { r: id },
    )
  ).body.data.vendorDifferences as { edges: Array<{ node: { id: string } }> };
  for (const e of open.edges) {
    const r = await graphql(
      gw,
      ADMIN,
      `
        mutation ($d: ID!) {
          acceptVendorDifference(id: $d, note: "their meter") {
            state
          }
        }
      `,
      { d: e.node.id },
    );
    expect(r.body.data).toEqual({ acceptVendorDifference: { state: 'accepted' } });
  }
  const disputed = await graphql(
    gw,
    ADMIN,
    `
      query ($r: ID!) {
        vendorDifferences(reconciliationId: $r, classes: ["billed_not_ours"], first: 1) {
          edges {
            node {
              id
            }
          }
        }
      }
    `,
    { r: id },
  );
  const d = (disputed.body.data.vendorDifferences as { edges: Array<{ node: { id: string } }> }).edges[0]!.node.id;
  expect(
    (
      await graphql(
        gw,
        ADMIN,
        `
          mutation ($d: ID!) {
            disputeVendorDifference(id: $d, note: "not our task") {
              state
              note
            }
          }
        `,
        { d },
      )
    ).body.data,
  ).toEqual({ disputeVendorDifference: { state: 'disputed', note: 'not our task' } });
  expect((await accept(gw, d)).body.errors?.[0]?.message).toMatch(/already disputed/);
  const [agree] = await sql(
    gw,
    `SELECT count(*)::int AS n FROM vendor_statement_line l JOIN task t ON t.upstream_task_id = l.vendor_task_id
     WHERE l.statement_id = $1 AND t.settled_at IS NOT NULL AND l.vendor_task_id NOT IN (SELECT vendor_task_id FROM vendor_recon_item WHERE class = 'duplicate' AND statement_id = $1)
       AND coalesce(t.charge_amount, 0) + coalesce((SELECT sum(amount) FROM ledger_entry e WHERE e.task_id = t.id AND e.kind = 'adjustment'), 0) <> l.amount`,
    [id],
  );
  expect(agree!.n).toBe(0);
  expect(await reconcile(gw.db)).toEqual([]);
  expect(
    (await sql(gw, `SELECT count(*)::int AS n FROM audit_record WHERE action = 'vendor-difference.accept'`))[0]!.n,
  ).toBe(K);
  const csvOut = await http(`${gw.url}/reports/vendor-statements/${id}/differences.csv`, { key: ADMIN });
  expect(csvOut.text.split('\n')[0]).toBe('class,vendor_task_id,task_id,model,unit,ours,theirs,difference,state,note');
  expect(csvOut.text.trim().split('\n')).toHaveLength(1 + 4 * K + K); // the items: differs, not ours, not billed, duplicates, pending
}, 180_000);

test('hostile statements: a clear 400 naming the line and column, or read as CSV; never a 500, never a partial import', async () => {
  const statements = async () => Number((await sql(gw, 'SELECT count(*)::int AS n FROM vendor_statement'))[0]!.n);
  const before = await statements();
  const refused: Array<[string, RegExp]> = [
    ['id,cost\n1,2\n', /no column "task_id" for taskId/],
    [
      'task_id,model,time,amount,unit\n7000001,x,2026-11-02T00:00:00Z,1e400,USD\n',
      /line 2, column "amount": "1e400" is not an amount/,
    ],
    [
      'task_id,model,time,amount,unit\n7000001,x,2026-11-02T00:00:00Z,NaN,USD\n',
      /line 2, column "amount": "NaN" is not an amount/,
    ],
    [
      'task_id,model,time,amount,unit\n7000001,x,2026-11-02T00:00:00Z,0.04,USD\n7000002,x,2026-11-02T00:00:00Z,"1,2,3",USD\n',
      /line 3, column "amount": "1,2,3" is not an amount/,
    ],
    [
      'task_id,model,time,amount,unit\n7000001,x,03/04/2026,0.04,USD\n',
      /line 2, column "time": .* could be day\/month or month\/day/,
    ],
    [
      'task_id,model,time,amount,unit\n7000001,x,2026-11-02T00:00:00Z,0.04,EUR\n',
      /line 2, column "unit": "EUR" is not a unit/,
    ],
    ['task_id,model,time,amount,unit\n"7000001,x\n', /not CSV as written/],
    ['', /it is empty/],
  ];
  for (const [csv, message] of refused) {
    const r = await post(csv);
    expect({ csv: csv.slice(0, 40), status: r.status }).toEqual({ csv: csv.slice(0, 40), status: 400 });
    expect(r.body.message).toMatch(message);
  }
  // A 200 MB line: refused as the record passes 64 KB, without reading the rest into memory.
  let sent = 0;
  const huge = new Readable({
    read() {
      if (sent === 0) this.push('task_id,model,time,amount,unit\n7000001,');
      sent += 1;
      this.push(sent > 200 ? null : 'x'.repeat(1024 * 1024));
    },
  });
  const big = await post(huge);
  expect(big.status).toBe(400);
  expect(big.body.message).toMatch(/a record over 64 KB/);
  expect(await statements()).toBe(before);

  // Read correctly: a BOM, CRLF, a quoted newline and a formula in a field; cents with a mapping, US dates.
  const ok = await post(
    '\uFEFFTask ID,Model,Billed,Cost (cents),Currency\r\n7000004,"=HYPERLINK(""http://x"")\r\nsecond line",11/30/2026 10:00,"1,204",usd\r\n',
    [
      { field: 'taskId', column: 'Task ID' },
      { field: 'model', column: 'Model' },
      { field: 'time', column: 'Billed', format: 'MM/DD/YYYY' },
      { field: 'amount', column: 'Cost (cents)', scale: '0.01' },
      { field: 'currency', column: 'Currency' },
    ],
  );
  expect(ok.status).toBe(201);
  const [row] = await sql(
    gw,
    `SELECT model, amount::text, billed_at, unit::text FROM vendor_statement_line WHERE statement_id = $1`,
    [ok.body.id],
  );
  expect(row).toEqual({
    model: '=HYPERLINK("http://x")\r\nsecond line',
    amount: '12.04',
    billed_at: new Date('2026-11-30T10:00:00Z'),
    unit: 'USD',
  });
  const exported = await http(`${gw.url}/reports/vendor-statements/${ok.body.id}/differences.csv`, { key: ADMIN });
  expect(exported.text).toContain(`"'=HYPERLINK(""http://x"")`); // neutralised in what we export
  // Nobody but finance and owners: a viewer is refused.
  expect(
    (await graphql(gw, 'sg_nobody', '{ vendorReconciliations { edges { node { id } } } }')).body.errors?.[0]?.extensions
      ?.code,
  ).toBe('UNAUTHENTICATED');
}, 120_000);

test('the sandbox walkthrough: `simulate --statement --discrepancies` then `vendor import` finds the three; a difference in a closed month is taken as a prior-period item', async () => {
  const url = await freshDatabase();
  const sb = await gateway(url, { EARLY_WARNING_MS: '0', LEDGER_SEAL_MS: '0' });
  try {
    const { projectId: p, key } = await projectWithKey(sb, 'sandbox-recon');
    for (let i = 0; i < 5; i++)
      expect((await submitGeneration(sb, key, { model: 'seedream-4.0', prompt: `p${i}` })).status).toBe(200);
    await eventually(
      async () =>
        (await sql(sb, 'SELECT count(*)::int AS n FROM task WHERE settled_at IS NOT NULL'))[0]!.n === 5
          ? true
          : undefined,
      20_000,
    );
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: url };
    const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
    const statement = await run(
      process.execPath,
      ['dist/src/cli/main.js', 'simulate', '--statement', day(-1), day(1), '--discrepancies'],
      { env },
    );
    expect(statement.stdout.split('\n')[0]).toBe('task_id,model,time,amount,unit');
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'spendgate-statement-')), 'statement.csv');
    writeFileSync(file, statement.stdout);
    const imported = await run(process.execPath, ['dist/src/cli/main.js', 'vendor', 'import', file], { env });
    expect(imported.stdout.trim()).toMatch(/^[0-9a-f-]{36}$/);
    expect(imported.stderr).toMatch(/^imported: 5 rows\n/);
    for (const c of ['amount_differs', 'billed_not_ours', 'ours_not_billed'])
      expect(imported.stderr).toMatch(new RegExp(`  ${c} +1  theirs `));
    const again = await run(process.execPath, ['dist/src/cli/main.js', 'vendor', 'import', file], { env });
    expect([again.stdout, again.stderr.split('\n')[0]]).toEqual([imported.stdout, 'already imported: 5 rows']);
    const unreadable = await run(
      process.execPath,
      ['dist/src/cli/main.js', 'vendor', 'import', file, '--mapping', '[{"field":"amount","column":"cost"}]'],
      { env },
    ).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    );
    expect(unreadable.code).not.toBe(0);
    expect(unreadable.stderr).toMatch(/no column "cost" for amount/);

    // An October task, October closed, then the vendor bills it 0.01 more: the adjustment is November's prior-period
    // item.
    const [old] = await sql(
      sb,
      `INSERT INTO task (project_id, model, family, kind, unit, status, upstream_task_id, price_basis, price_book_version, exactness, estimate_amount, hold_amount, charge_amount, charge_exactness, accepted_at, settled_at)
       VALUES ($1, 'seedream-4.0', 'seedream', 'image', 'USD', 'ready', 6000001, '{}', 1, 'EXACT', 0.04, 0.04, 0.04, 'EXACT', '2026-10-15T10:00:00Z', '2026-10-15T10:00:05Z') RETURNING id::text`,
      [p],
    );
    await sql(sb, `INSERT INTO task_upstream (upstream_task_id, task_id, project_id) VALUES (6000001, $1, $2)`, [
      old!.id,
      p,
    ]);
    await sql(
      sb,
      `INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at) SELECT $1, $2, k::"LedgerKind", 'USD', 0.04, '2026-10-15T10:00:00Z' FROM unnest(ARRAY['hold', 'release', 'charge']) k`,
      [p, old!.id],
    );
    expect((await graphql(sb, ADMIN, 'mutation { closeMonth(month: "2026-10") { month } }')).body.data).toEqual({
      closeMonth: { month: '2026-10' },
    });
    const late = await fetch(`${sb.url}/reports/vendor-statements`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'text/csv' },
      body: 'task_id,model,time,amount,unit\n6000001,seedream-4.0,2026-10-15T10:00:00Z,0.05,USD\n',
    });
    expect(late.status).toBe(201);
    const r = (await late.json()) as { id: string };
    const items = await graphql(
      sb,
      ADMIN,
      `
        query ($r: ID!) {
          vendorDifferences(reconciliationId: $r, classes: ["amount_differs"]) {
            edges {
              node {
                id
                difference
              }
            }
          }
        }
      `,
      { r: r.id },
    );
    const item = (items.body.data.vendorDifferences as { edges: Array<{ node: { id: string; difference: string } }> })
      .edges[0]!.node;
    expect(item.difference).toBe('0.01');
    expect((await accept(sb, item.id)).body.data).toEqual({ acceptVendorDifference: { state: 'accepted' } });
    const [entry] = await sql(
      sb,
      `SELECT amount::text, effective_at >= '2026-11-01' AS november, belongs_to IS NOT NULL AS prior FROM ledger_entry WHERE task_id = $1 AND kind = 'adjustment'`,
      [old!.id],
    );
    expect(entry).toEqual({ amount: '0.01', november: true, prior: true });
    expect(await reconcile(sb.db)).toEqual([]);
  } finally {
    await sb.close();
  }
}, 120_000);
