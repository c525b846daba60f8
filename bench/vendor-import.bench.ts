/**
 * `npm run bench:vendor-import`: importing a vendor statement of BENCH_ROWS (1,000,000) rows
 * through the real gateway process (POST /reports/vendor-statements, streamed from a file) against
 * as many settled tasks (each with its hold, release and charge in the ledger). Prints the import's
 * wall time, the gateway process's peak resident memory during it (sampled from /proc every 50 ms,
 * and VmHWM, the kernel's own peak), the classes found, and the second import of the same file
 * (nothing changes). Writes bench/results/vendor-import.json; asserts nothing.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, createReadStream, createWriteStream, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { Readable } from 'node:stream';
import { Database } from '../src/database/database.js';
import { machine, publish, speedProbe, withScratchPostgres } from './support.js';

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const ADMIN = 'bench-admin-token-0123456789';
const DAY0 = Date.UTC(2026, 9, 1);

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });

/** Resident memory of a process in MB (current, and the kernel's peak). */
function memory(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
  return { rss: Math.round(kb('VmRSS') / 1024), hwm: Math.round(kb('VmHWM') / 1024) };
}

await withScratchPostgres('vendor-import', [], async (server, dir) => {
  const probe = speedProbe();
  const db = new Database(server.url, 2);
  const [{ id: project }] = (
    await db.query<{ id: string }>(`INSERT INTO project (id, name) VALUES (gen_random_uuid(), 'billed') RETURNING id`)
  ).rows as [{ id: string }];
  const written = Date.now();
  for (let from = 1; from <= ROWS; from += 100_000) {
    await db.query(
      `WITH t AS (
         INSERT INTO task (project_id, model, family, kind, unit, status, upstream_task_id, price_basis, price_book_version, exactness,
                           estimate_amount, hold_amount, charge_amount, charge_exactness, accepted_at, settled_at, updated_at)
         SELECT $1, CASE WHEN g % 3 = 0 THEN 'glm-5.3' ELSE 'seedream-4.0' END, CASE WHEN g % 3 = 0 THEN 'glm' ELSE 'seedream' END,
                CASE WHEN g % 3 = 0 THEN 'chat' ELSE 'image' END, CASE WHEN g % 3 = 0 THEN 'CREDITS' ELSE 'USD' END::"Unit", 'ready',
                10000000 + g, '{}', 1, 'EXACT', 12.5, 12.5, CASE WHEN g % 3 = 0 THEN 10 + (g % 7) * 0.125 ELSE 0.04 END, 'EXACT',
                $2::timestamptz + make_interval(secs => g * 2.5), $2::timestamptz + make_interval(secs => g * 2.5 + 5), now()
         FROM generate_series($3::int, $4::int) g RETURNING id, project_id, unit, hold_amount, charge_amount, accepted_at, upstream_task_id),
       k AS (INSERT INTO task_upstream (upstream_task_id, task_id, project_id) SELECT upstream_task_id, id, project_id FROM t)
       INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at)
       SELECT project_id, id, k.kind::"LedgerKind", unit, CASE k.kind WHEN 'charge' THEN charge_amount ELSE hold_amount END, accepted_at
       FROM t, (VALUES ('hold'), ('release'), ('charge')) k(kind)`,
      [project, new Date(DAY0), from, Math.min(from + 99_999, ROWS)],
    );
  }
  console.log(
    `wrote ${ROWS.toLocaleString('en')} settled tasks (${(ROWS * 3).toLocaleString('en')} ledger entries) in ${((Date.now() - written) / 1000).toFixed(1)} s`,
  );

  // The statement: what the vendor bills for them, one in every 10,000 at a cent more.
  const file = path.join(dir, 'statement.csv');
  const out = createWriteStream(file);
  out.write('task_id,model,time,amount,unit\n');
  for (let from = 1; from <= ROWS; from += 100_000) {
    const { rows } = await db.query<{ v: string; model: string; at: string; amount: string; unit: string }>(
      `SELECT upstream_task_id::text AS v, model, to_char(accepted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS at,
              CASE WHEN upstream_task_id % 10000 = 7 THEN charge_amount + 0.01 ELSE charge_amount END::text AS amount, unit::text
       FROM task WHERE upstream_task_id BETWEEN $1 AND $2 ORDER BY upstream_task_id`,
      [10_000_000 + from, 10_000_000 + Math.min(from + 99_999, ROWS)],
    );
    if (!out.write(rows.map((r) => `${r.v},${r.model},${r.at},${r.amount},${r.unit}\n`).join('')))
      await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((r) => out.end(() => r()));
  await db.close();
  const bytes = statSync(file).size;

  const port = await freePort();
  // BENCH_GATEWAY_FLAGS: node flags for the gateway's process (e.g. --max-semi-space-size=4).
  const flags = process.env.BENCH_GATEWAY_FLAGS?.split(' ').filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...flags, 'dist/src/main.js'], {
    env: {
      ...process.env,
      PORT: String(port),
      DATABASE_URL: server.url,
      UPSTREAM_BASE_URL: 'http://127.0.0.1:9',
      UPSTREAM_API_KEY: 'bench-vendor-key',
      ADMIN_TOKEN: ADMIN,
      LOG_LEVEL: 'warn',
      POLLER_ENABLED: 'false',
      EARLY_WARNING_MS: '0',
      LEDGER_SEAL_MS: '0',
      NODE_ENV: 'production',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const gateway = `http://127.0.0.1:${port}`;
  try {
    for (
      let i = 0;
      i < 300 &&
      !(await fetch(`${gateway}/healthz`).then(
        (r) => r.ok,
        () => false,
      ));
      i++
    )
      await new Promise((r) => setTimeout(r, 100));
    const idle = memory(child.pid!);
    const importFile = async () => {
      let peak = 0;
      const sampler = setInterval(() => (peak = Math.max(peak, memory(child.pid!).rss)), 50);
      const started = performance.now();
      const res = await fetch(`${gateway}/reports/vendor-statements`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'text/csv' },
        body: Readable.toWeb(createReadStream(file)) as ReadableStream,
        duplex: 'half',
      } as RequestInit);
      const body = (await res.json()) as {
        id: string;
        created: boolean;
        rows: number;
        classes: Array<{ class: string; unit: string; count: number }>;
        message?: string;
      };
      const seconds = (performance.now() - started) / 1000;
      clearInterval(sampler);
      if (!res.ok) throw new Error(`import answered ${res.status}: ${body.message}`);
      return { status: res.status, seconds: Number(seconds.toFixed(1)), peakRssMb: peak, body };
    };
    const first = await importFile();
    const again = await importFile();
    // The same rows and one more, through `spendgate vendor import` (its own process): parsed and
    // written in full, the million found repeated.
    appendFileSync(file, `${20_000_000},seedream-4.0,2026-10-02T00:00:00Z,0.04,USD\n`);
    const cli = spawn(process.execPath, ['dist/src/cli/main.js', 'vendor', 'import', file], {
      env: { ...process.env, DATABASE_URL: server.url, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let cliPeak = 0;
    let cliErr = '';
    cli.stderr!.on('data', (c: Buffer) => (cliErr += c.toString()));
    const cliSampler = setInterval(() => {
      try {
        cliPeak = Math.max(cliPeak, memory(cli.pid!).rss);
      } catch {
        /* exited */
      }
    }, 50);
    const cliStarted = performance.now();
    const cliCode = await new Promise<number>((r) => cli.once('exit', (code) => r(code ?? -1)));
    clearInterval(cliSampler);
    const cliSeconds = Number(((performance.now() - cliStarted) / 1000).toFixed(1));
    publish('vendor-import', {
      machine: `${machine()}, node ${process.version}, PostgreSQL embedded (defaults: fsync on)`,
      date: new Date().toISOString().slice(0, 10),
      speedProbeMs: [probe, speedProbe()],
      rows: ROWS,
      fileMb: Math.round(bytes / 2 ** 20),
      gatewayIdleRssMb: idle.rss,
      import: {
        status: first.status,
        seconds: first.seconds,
        peakRssMb: first.peakRssMb,
        rows: first.body.rows,
        classes: first.body.classes.map((c) => `${c.class} ${c.unit} ${c.count}`),
      },
      sameFileAgain: {
        status: again.status,
        seconds: again.seconds,
        created: again.body.created,
        sameId: again.body.id === first.body.id,
      },
      gatewayPeakRssMbOverall: memory(child.pid!).hwm,
      cli: { exit: cliCode, seconds: cliSeconds, peakRssMb: cliPeak, said: cliErr.trim().split('\n')[0] },
    });
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
});
