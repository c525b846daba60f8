/**
 * A tamper-evident ledger (decisions §13) and the statement as a document: seals never cover an id a
 * transaction still in flight can commit; `spendgate ledger verify` passes on an untouched ledger
 * and names the entry after an amount edited, an entry deleted and an entry inserted into a sealed
 * interval, all with the triggers off (session_replication_role = replica); a closed month's
 * statement no longer matching its ledger is reported too. The statement PDF read back with
 * poppler (pdftotext) and rendered to a picture (pdftoppm).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Gateway } from '../../src/bootstrap.js';
import { LedgerSealer } from '../../src/ledger/ledger-sealer.js';
import { LedgerService } from '../../src/ledger/ledger.service.js';
import { Money } from '../../src/pricing/money.js';
import { openBrowser, signIn } from '../../bench/browser.js';
import { PeopleService } from '../../src/people/people.service.js';
import { TokensService } from '../../src/people/tokens.service.js';
import { heldTask } from '../support/builders.js';
import { ADMIN, freshDatabase, gateway, graphql, projectWithKey, sql } from '../support/harness.js';
import { charge } from '../support/statements.js';
import { asSuperuser, runCli } from '../support/tampering.js';

let url: string;
let gw: Gateway;
let projectId: string;

const verify = () => runCli(url, ['ledger', 'verify']);
/** As a superuser with the triggers off: what verify must catch. */
const tamper = (statements: string[]) => asSuperuser(url, statements);

beforeAll(async () => {
  url = await freshDatabase();
  gw = await gateway(url, { POLLER_ENABLED: 'false', LEDGER_SEAL_MS: '0' });
  projectId = (await projectWithKey(gw, 'Forschung & Entwicklung')).projectId;
  const ledger = gw.app.get(LedgerService);
  for (let i = 0; i < 120; i++) {
    const t = await heldTask(gw, { projectId, acceptedAt: new Date(Date.UTC(2026, 9, 1 + (i % 30), 10)) });
    if (i % 6)
      await ledger.settle({
        taskId: t.taskId,
        status: 'ready',
        charge: charge(i % 11 ? '0.04' : '0.05'),
        usage: {},
        rollup: { images: '1' },
      });
  }
  await ledger.adjust(
    projectId,
    Money.of('USD', '-0.25'),
    'a credit for a failed batch',
    undefined,
    new Date('2026-10-20T00:00:00Z'),
  );
}, 60_000);
afterAll(() => gw.close());

test('a seal never covers an id that a transaction in flight can still commit', async () => {
  const sealer = new LedgerSealer(gw.db);
  // A transaction takes an id and waits; later entries commit around it.
  const slow = new pg.Client({ connectionString: url });
  await slow.connect();
  await slow.query('BEGIN');
  const { rows } = await slow.query<{ id: string }>(
    `INSERT INTO ledger_entry (project_id, kind, unit, amount, effective_at, reason) VALUES ($1, 'adjustment', 'USD', 0.01, now(), 'slow') RETURNING id::text`,
    [projectId],
  );
  const slowId = BigInt(rows[0]!.id);
  await gw.app.get(LedgerService).adjust(projectId, Money.of('USD', '0.02'), 'fast', undefined);
  await sealer.sealAll();
  const sealedTo = BigInt(
    (await sql(gw, 'SELECT coalesce(max(last_id), 0)::text AS l FROM ledger_seal'))[0]!.l as string,
  );
  expect(sealedTo).toBeLessThan(slowId);
  await slow.query('COMMIT');
  await slow.end();
  await sealer.sealAll();
  const after = BigInt((await sql(gw, 'SELECT max(last_id)::text AS l FROM ledger_seal'))[0]!.l as string);
  expect(after).toBeGreaterThan(slowId);
  expect(verify()).toEqual({
    code: 0,
    out: expect.stringMatching(
      /^ledger verify: \d+ entries in \d+ seals unchanged; 0 closed-month statements match the ledger; 0 newer entries not sealed yet; head \d+ [0-9a-f]{64} \(no kept head given: .*\)\n$/,
    ),
  });
});

test('ledger verify names the entry edited, deleted, or inserted into a sealed interval with the triggers off', async () => {
  // A gap inside what is sealed: an id taken by a transaction that rolled back.
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('BEGIN');
  const gap = (
    await client.query<{ id: string }>(
      `INSERT INTO ledger_entry (project_id, kind, unit, amount, effective_at, reason) VALUES ($1, 'adjustment', 'USD', 1, now(), 'rolled back') RETURNING id::text`,
      [projectId],
    )
  ).rows[0]!.id;
  await client.query('ROLLBACK');
  await client.end();
  await gw.app.get(LedgerService).adjust(projectId, Money.of('USD', '0.03'), 'after the gap', undefined);
  await new LedgerSealer(gw.db).sealAll();
  expect(verify().code).toBe(0);

  const [entry] = await sql(
    gw,
    `SELECT id::text, amount::text FROM ledger_entry WHERE kind = 'charge' ORDER BY id LIMIT 1 OFFSET 7`,
  );
  await tamper([`UPDATE ledger_entry SET amount = 0.01 WHERE id = ${entry!.id}`]);
  expect(verify()).toEqual({
    code: 1,
    out: `ledger verify: FAILED: ledger entry ${entry!.id} was edited after it was sealed (seal 1)\n`,
  });
  await tamper([`UPDATE ledger_entry SET amount = ${entry!.amount} WHERE id = ${entry!.id}`]);
  expect(verify().code).toBe(0);

  const [row] = await sql(
    gw,
    `SELECT id, project_id, task_id, amount::text, effective_at::text, created_at::text FROM ledger_entry WHERE kind = 'hold' ORDER BY id LIMIT 1 OFFSET 3`,
  );
  await tamper([`DELETE FROM ledger_entry WHERE id = ${row!.id}`]);
  expect(verify()).toEqual({
    code: 1,
    out: `ledger verify: FAILED: ledger entry ${row!.id} was deleted after it was sealed (seal 1)\n`,
  });
  await tamper([
    `INSERT INTO ledger_entry (id, project_id, task_id, kind, unit, amount, effective_at, created_at, reason, belongs_to)
     SELECT ${row!.id}, '${row!.project_id}', ${row!.task_id}, 'hold', 'USD', ${row!.amount}, '${row!.effective_at}', '${row!.created_at}', NULL, NULL`,
  ]);
  expect(verify().code).toBe(0);

  await tamper([
    `INSERT INTO ledger_entry (id, project_id, kind, unit, amount, effective_at, reason) VALUES (${gap}, '${projectId}', 'adjustment', 'USD', -5, '2026-10-03', 'backdated credit')`,
  ]);
  expect(verify()).toEqual({
    code: 1,
    out: expect.stringMatching(
      new RegExp(`^ledger verify: FAILED: ledger entry ${gap} was inserted into a sealed interval \\(seal \\d+\\)\n$`),
    ),
  });
  await tamper([`DELETE FROM ledger_entry WHERE id = ${gap}`]);
  expect(verify().code).toBe(0);
  // The table refuses all of this while the triggers are on.
  await expect(sql(gw, `UPDATE ledger_entry SET amount = 0 WHERE id = ${entry!.id}`)).rejects.toThrow(/append-only/);
});

test('a closed month: its statement as CSV and a PDF a person can read, and verify catches a change to the month even before sealing', async () => {
  const closed = await graphql(gw, ADMIN, 'mutation { closeMonth(month: "2026-10") { carriedTasks } }');
  expect(closed.body.data.closeMonth.carriedTasks).toBe(20);
  const pdf = Buffer.from(
    await (
      await fetch(`${gw.url}/reports/statements/${projectId}/2026-10.pdf`, {
        headers: { authorization: `Bearer ${ADMIN}` },
      })
    ).arrayBuffer(),
  );
  expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'statement-'));
  writeFileSync(path.join(dir, 'statement.pdf'), pdf);
  const text = execFileSync('pdftotext', ['-layout', path.join(dir, 'statement.pdf'), '-'], { encoding: 'utf8' });
  const statement = (
    await graphql(
      gw,
      ADMIN,
      `
        query ($p: ID!) {
          statement(projectId: $p, month: "2026-10") {
            totals {
              unit
              amount
            }
            ledgerDigest
          }
        }
      `,
      { p: projectId },
    )
  ).body.data.statement;
  expect(text).toContain('Statement: Forschung & Entwicklung');
  expect(text).toContain('October 2026 (UTC)');
  expect(text).toMatch(new RegExp(`USD\\s+${statement.totals[0].amount.replace('.', '\\.')}\\s+100`));
  expect(text).toContain('a credit for a failed batch');
  expect(text).toContain('Open at close');
  expect(text.replace(/\s+/g, '')).toContain(statement.ledgerDigest);
  execFileSync('pdftoppm', [
    '-png',
    '-r',
    '70',
    '-f',
    '1',
    '-l',
    '1',
    path.join(dir, 'statement.pdf'),
    path.join(dir, 'page'),
  ]);
  const png = readFileSync(path.join(dir, 'page-1.png'));
  if (process.env.SPENDGATE_WRITE_DOCS) writeFileSync(path.join('docs', 'screenshots', 'statement.png'), png); // the picture in docs/closing.md
  expect(png.subarray(1, 4).toString()).toBe('PNG');
  expect(png.length).toBeGreaterThan(10_000);

  // An October entry changed after the close (unsealed or not): the statement no longer matches.
  const [late] = await sql(
    gw,
    `SELECT id::text, amount::text FROM ledger_entry WHERE effective_at < '2026-11-01' AND kind = 'charge' ORDER BY id DESC LIMIT 1`,
  );
  await tamper([`UPDATE ledger_entry SET amount = amount + 1 WHERE id = ${late!.id}`]);
  const failed = verify();
  expect(failed.code).toBe(1);
  expect(failed.out).toContain(
    `closed month 2026-10, project ${projectId}: the ledger no longer matches its statement`,
  );
  await tamper([`UPDATE ledger_entry SET amount = ${late!.amount} WHERE id = ${late!.id}`]);
  expect(verify()).toEqual({ code: 0, out: expect.stringMatching(/1 closed-month statements match the ledger/) });
});

test('the Months page: October final with its statements to download; Close only for those who close the books', async () => {
  const browser = await openBrowser();
  try {
    const page = await browser.newPage();
    await signIn(page, gw.url, ADMIN);
    await page.goto(`${gw.url}/console/#/months`);
    await page.waitForSelector('[data-ready=months]');
    expect(await page.textContent('tr[data-month="2026-10"]')).toContain('closed · final');
    // Months close in order from the first with entries (October): no Close on September, which a
    // close cannot take (decisions §13); November's only once it is over.
    const novemberOver = Date.now() >= Date.UTC(2026, 11, 1);
    expect(await page.$$('[data-testid=months] button:has-text("Close")')).toHaveLength(novemberOver ? 1 : 0);
    if (novemberOver) expect(await page.$$('tr[data-month="2026-11"] button:has-text("Close")')).toHaveLength(1);
    await page.click('tr[data-month="2026-10"] button:has-text("statements")');
    await page.waitForSelector('[data-testid="statements-2026-10"]');
    expect(await page.textContent('[data-testid="statements-2026-10"]')).toContain('Forschung & Entwicklung');
    const href = await page.getAttribute('[data-testid="statements-2026-10"] a:has-text("PDF")', 'href');
    expect(href).toBe(`/reports/statements/${projectId}/2026-10.pdf`);
    expect(await page.evaluate(async (h) => (await (await fetch(h!)).text()).slice(0, 5), href)).toBe('%PDF-');
    // November received October's late movements? None here, but a viewer sees no Close button at all.
    const viewer = await gw.app
      .get(PeopleService)
      .invite('viewer@example.com', { role: 'VIEWER', projectIds: null }, 'test');
    const viewerPage = await browser.newPage();
    await signIn(
      viewerPage,
      gw.url,
      (await gw.app.get(TokensService).create({ personId: viewer.id }, 'browser')).secret,
    );
    await viewerPage.goto(`${gw.url}/console/#/months`);
    await viewerPage.waitForSelector('[data-ready=months]');
    expect(await viewerPage.$$('button:has-text("Close")')).toHaveLength(0);
    expect(await viewerPage.$$('button:has-text("reopen")')).toHaveLength(0);
  } finally {
    await browser.close();
  }
}, 60_000);
