/**
 * How a vendor statement's body reaches its import (statement-spool.ts, reads/statement-upload.ts): the reads
 * worker first says whether the caller may import, then the main thread takes the body to a file at
 * the process's priority and hands the worker its path. A refused body is never written to disk; a
 * client cannot name a file for the worker to read; the pre-check is not audited a second time; and
 * with the machine saturated by two busy loops a 200 MB hostile body still gets its 400 (it got 408
 * when the body had to pass through the lowest-priority reads thread); a spool the gateway cannot
 * write is its own 503, not the statement's 400.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, watch, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { Gateway } from '../../src/bootstrap.js';
import { spool, SPOOLED_STATEMENT } from '../../src/vendor-statements/statement-spool.js';
import { ADMIN, eventually, freshDatabase, gateway, projectWithKey, sql } from '../support/harness.js';
import { CookieJar } from '../support/cookie-jar.js';

let gw: Gateway;
let key: string;

beforeAll(async () => {
  gw = await gateway(await freshDatabase(), { POLLER_ENABLED: 'false', EARLY_WARNING_MS: '0', LEDGER_SEAL_MS: '0' });
  key = (await projectWithKey(gw, 'statement-upload')).key;
}, 60_000);
afterAll(() => gw.close());

const HEADER = 'task_id,model,time,amount,unit\n';
const rows = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => `${from + i},seedream-4.0,2026-11-02T00:00:00Z,0.04,USD\n`).join('');

/** `mb` megabytes of statement rows, made as they are read (never whole in memory). */
function megabytes(mb: number, line = 'x'.repeat(1024 * 1024)): Readable {
  let sent = 0;
  return new Readable({
    read() {
      if (sent === 0) this.push(HEADER + '8000001,');
      sent += 1;
      this.push(sent > mb ? null : line);
    },
  });
}

async function post(body: string | Readable, headers: Record<string, string>, fetcher: typeof fetch = fetch) {
  const res = await fetcher(`${gw.url}/reports/vendor-statements`, {
    method: 'POST',
    headers: { 'content-type': 'text/csv', ...headers },
    body: typeof body === 'string' ? body : (Readable.toWeb(body) as ReadableStream),
    ...(typeof body === 'string' ? {} : { duplex: 'half' }),
  } as RequestInit);
  return { status: res.status, body: (await res.json()) as { rows?: number; message?: string } };
}

/** Runs `during` and returns the spool directories made in the temporary directory meanwhile. */
async function spooledDuring(during: () => Promise<void>): Promise<string[]> {
  const made = new Set<string>(); // a name comes twice: made, then removed
  const watcher = watch(os.tmpdir(), (_event, name) => {
    if (name?.startsWith('spendgate-statement-')) made.add(name);
  });
  try {
    await during();
  } finally {
    watcher.close();
  }
  return [...made];
}

const statements = async () => Number((await sql(gw, 'SELECT count(*)::int AS n FROM vendor_statement'))[0]!.n);

test('a refused caller is answered before any of its body is written: no credential 401, a project key 403, a session without its CSRF token 403', async () => {
  const before = await statements();
  const jar = new CookieJar();
  expect(
    (
      await jar.fetch(`${gw.url}/auth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token: ADMIN }),
      })
    ).status,
  ).toBe(200);
  const answers: Array<[number, string]> = [];
  const made = await spooledDuring(async () => {
    for (const [headers, fetcher] of [
      [{}, fetch],
      [{ authorization: `Bearer ${key}` }, fetch],
      [{}, jar.fetch.bind(jar) as typeof fetch],
    ] as const) {
      const r = await post(megabytes(20), headers, fetcher);
      answers.push([r.status, r.body.message ?? '']);
    }
  });
  expect(answers.map(([status]) => status)).toEqual([401, 403, 403]);
  expect(answers[2]![1]).toMatch(/csrf/i);
  expect(made).toEqual([]);
  expect(await statements()).toBe(before);
}, 60_000);

test('a client cannot name a file for the import: the header is dropped and the body is what is read; the pre-check is not audited', async () => {
  // A spool directory as the main thread makes them, holding other rows.
  const dir = mkdtempSync(path.join(os.tmpdir(), 'spendgate-statement-'));
  const file = path.join(dir, 'statement.csv');
  writeFileSync(file, HEADER + rows(8100001, 5));
  const audited = async () =>
    (await sql(gw, `SELECT after FROM audit_record WHERE action = 'admin-token.read' ORDER BY seq`)).map((r) =>
      String(r.after),
    );
  const before = (await audited()).length;
  let r: Awaited<ReturnType<typeof post>> | undefined;
  const spooled = await spooledDuring(async () => {
    r = await post(HEADER + rows(8200001, 2), { authorization: `Bearer ${ADMIN}`, [SPOOLED_STATEMENT]: file });
  });
  expect(r!.status).toBe(201);
  expect(r!.body.rows).toBe(2);
  // One spool: the main thread's, which the worker read rather than spooling again; removed once it answered.
  expect(spooled).toHaveLength(1);
  expect(spooled[0]).not.toBe(path.basename(dir));
  await eventually(async () => !existsSync(path.join(os.tmpdir(), spooled[0]!)), 10_000);
  // One audit record for the import; none for the main thread's question before it.
  const added = (await audited()).slice(before);
  expect(added).toHaveLength(1);
  expect(added[0]).toContain('/reports/vendor-statements');
  // The client's file is untouched.
  expect(readFileSync(file, 'utf8')).toBe(HEADER + rows(8100001, 5));
  rmSync(dir, { recursive: true });
}, 60_000);

test('a gateway that cannot store a statement (its spool directory is gone) says it is its own fault: 503, nothing imported', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'spendgate-spool-test-'));
  const spoolDir = path.join(dir, 'spool');
  const other = await gateway(await freshDatabase(), { POLLER_ENABLED: 'false', STATEMENT_SPOOL_DIR: spoolDir });
  try {
    const send = () =>
      fetch(`${other.url}/reports/vendor-statements`, {
        method: 'POST',
        headers: { 'content-type': 'text/csv', authorization: `Bearer ${ADMIN}` },
        body: HEADER + rows(8300001, 3),
      });
    const count = async () => Number((await sql(other, 'SELECT count(*)::int AS n FROM vendor_statement'))[0]!.n);
    // It was answered 400, "did not arrive whole": the client would have sent a whole statement again and again.
    const refused = await send();
    const body = (await refused.json()) as { message: string };
    expect(refused.status).toBe(503);
    expect(body.message).toMatch(
      /cannot store a statement .*\(ENOENT on its statement spool directory, STATEMENT_SPOOL_DIR\): nothing was imported/,
    );
    expect(body.message).not.toContain(dir); // no local path in an answer
    expect(await count()).toBe(0);
    // Once the directory is there, the same statement is taken, spooled there.
    mkdirSync(spoolDir);
    expect((await send()).status).toBe(201);
    expect(await count()).toBe(1);
  } finally {
    await other.close();
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);

test("a body cut off is the client's to send again (400), even though its error reaches the file too", async () => {
  for (const cut of [
    (b: Readable) => b.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' })),
    (b: Readable) => b.destroy(), // closed early, no error: pipeline's premature close
  ]) {
    const body = new Readable({ read() {} });
    body.push(HEADER + rows(8400001, 2));
    setTimeout(() => cut(body), 20);
    await expect(spool(body)).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/did not arrive whole/),
    });
  }
});

test('with the machine saturated (two busy loops at normal priority), a 200 MB hostile body still gets its 400', async () => {
  const loops: ChildProcess[] = [0, 1].map(() => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  try {
    const before = await statements();
    const big = await post(megabytes(200), { authorization: `Bearer ${ADMIN}` });
    expect(big.status).toBe(400);
    expect(big.body.message).toMatch(/a record over 64 KB/);
    expect(await statements()).toBe(before);
  } finally {
    for (const loop of loops) loop.kill('SIGKILL');
  }
}, 180_000);
