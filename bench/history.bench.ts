/**
 * `npm run bench:history` (decisions §18): years of history against an empty database, side by
 * side in one run on one embedded PostgreSQL (two databases, default durability).
 * - history: BENCH_TASKS settled tasks (default 10,000,000) over 12 months, made in SQL
 *   (bench/history-data.ts); bytes per task (tables and indexes) beside LiteLLM's 6.3 KB a row;
 * - submissions: a gateway process on each database, chat at 500/s open loop (CPU per submission of
 *   the gateway and PostgreSQL, p99), and holds/s (64 clients, in process), alternated twice;
 * - reports through GraphQL: the month by project × model × day (9,000 groups) and the top 100 users;
 * - the oldest month closed, its entries sealed, then archived to Parquet;
 * - the migration to partitions of a BENCH_MIGRATE_TASKS database (default 1,000,000): its time, and
 *   the longest a query of the task table waited meanwhile (what a running gateway sees).
 * BENCH_PARTS (default submissions,reports,archive,migration) runs only those parts.
 * Prints figures and writes bench/results/history.json; asserts nothing.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { AuditService } from '../src/audit/audit.service.js';
import { ChangesService } from '../src/audit/changes.service.js';
import { CommitmentsService } from '../src/commitments/commitments.service.js';
import { MonthCloseService } from '../src/closing/month-close.service.js';
import { findRoute } from '../src/catalog/catalog.js';
import { Database } from '../src/database/database.js';
import { freePort } from '../src/database/embedded.js';
import { migrate } from '../src/database/migrate.js';
import { ArchiveService } from '../src/history/archive.service.js';
import { LedgerSealer } from '../src/ledger/ledger-sealer.js';
import { LedgerService } from '../src/ledger/ledger.service.js';
import { quote } from '../src/pricing/engine.js';
import { Money } from '../src/pricing/money.js';
import { buildPriceBook, SPEC_PRICE_ROWS } from '../src/pricing/price-book.js';
import { bytesPerTask, HISTORY_TASKS, seededMonths, seedHistory } from './history-data.js';
import { openLoopRun } from './open-loop.js';
import { seed as seedReports } from './reports-data.js';
import { BenchServers, CHAT, benchProject, waitFor } from './servers.js';
import { machine, median, publish, speedProbe, withScratchPostgres } from './support.js';

const MIGRATE_TASKS = Number(process.env.BENCH_MIGRATE_TASKS ?? 1_000_000);
const RATE = 500;
const HOLD_SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const ADMIN = 'bench-admin-token-0123456789';
const BEFORE_PARTITIONS = '20261127160000_submission_ref';
const PARTS = (process.env.BENCH_PARTS ?? 'submissions,reports,archive,migration').split(',');
const log = (line: string) => console.error(`[${new Date().toISOString().slice(11, 19)}] ${line}`);
const ms = (t: number) => Math.round((performance.now() - t) * 10) / 10;
const CLI = { actor: { kind: 'named' as const, actorKind: 'cli', id: 'bench', label: 'cli:bench' } };
const CLIENT = { requestId: null, clientAddress: null, userAgent: 'bench' };

async function database(url: string, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** A gateway process on `url`; `use` runs against its base URL and key. */
async function withGateway<T>(url: string, use: (base: string, key: string, pid: number) => Promise<T>): Promise<T> {
  const servers = new BenchServers();
  try {
    const { key } = await benchProject(url, `bench-${Date.now()}`);
    const [simPort, port] = [await freePort(), await freePort()];
    servers.simulator(simPort);
    const { pid } = servers.start(['dist/src/main.js'], {
      PORT: String(port),
      DATABASE_URL: url,
      UPSTREAM_BASE_URL: `http://127.0.0.1:${simPort}`,
      UPSTREAM_API_KEY: 'bench-vendor-key',
      ADMIN_TOKEN: ADMIN,
      LOG_LEVEL: 'warn',
      POLLER_ENABLED: 'false',
      LEDGER_SEAL_MS: '0',
      EARLY_WARNING_MS: '0',
      NODE_ENV: 'production',
    });
    await waitFor(`http://127.0.0.1:${simPort}/__sim/tasks`);
    await waitFor(`http://127.0.0.1:${port}/healthz`);
    return await use(`http://127.0.0.1:${port}`, key, pid!);
  } finally {
    await servers.stop();
  }
}

async function submissions(url: string, postgres: number) {
  return withGateway(url, async (base, key, pid) => {
    const r = await openLoopRun(
      'chat',
      `${base}/api-platform/v1/chat/completions`,
      { authorization: `Bearer ${key}` },
      CHAT,
      RATE,
      { target: pid, postgres },
    );
    const cpu = r.cpuMsPerRequest as Record<string, number>;
    return {
      cpuMsPerSubmission: Math.round(((cpu.target ?? 0) + (cpu.postgres ?? 0)) * 1000) / 1000,
      gatewayMs: cpu.target,
      postgresMs: cpu.postgres,
      p99Ms: r.p99Ms,
      non200: r.non200,
    };
  });
}

async function holdsPerSecond(url: string) {
  const db = new Database(url, 16);
  try {
    const ledger = new LedgerService(db);
    const { projectId } = await benchProject(url, `holds-${Date.now()}`);
    const route = findRoute('seedream-4.0')!;
    const q = quote(
      { route, body: { model: route.id, prompt: 'bench' } },
      buildPriceBook(1, new Date(0), SPEC_PRICE_ROWS),
    );
    const request = {
      projectId,
      apiKeyId: null,
      model: route.id,
      family: route.family,
      kind: route.kind,
      hold: Money.of(q.unit, q.amount),
      quote: q,
      priceBookVersion: 1,
    };
    let done = 0;
    const until = performance.now() + HOLD_SECONDS * 1000;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (performance.now() < until) if ((await ledger.hold(request)).outcome === 'held') done += 1;
      }),
    );
    return Math.round(done / HOLD_SECONDS);
  } finally {
    await db.close();
  }
}

async function reports(url: string, month: Date) {
  return withGateway(url, async (base) => {
    const from = month.toISOString();
    const to = new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth() + 1, 1)).toISOString();
    const ask = async (query: string) => {
      const t = performance.now();
      const res = await fetch(`${base}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` },
        body: JSON.stringify({ query, variables: { from, to } }),
      });
      const body = (await res.json()) as { data?: { spendReport: unknown[] } };
      return { ms: ms(t), rows: body.data?.spendReport.length ?? -1 };
    };
    const timed = async (query: string) => {
      await ask(query);
      const runs = [];
      for (let i = 0; i < 5; i++) runs.push(await ask(query));
      return { p50Ms: median(runs.map((r) => r.ms)), rows: runs[0]!.rows };
    };
    return {
      monthByProjectModelDay: await timed(
        'query($from: DateTime!, $to: DateTime!) { spendReport(from: $from, to: $to, groupBy: ["project", "model", "day"]) { keys totals { unit amount } tasks } }',
      ),
      top100Users: await timed(
        'query($from: DateTime!, $to: DateTime!) { spendReport(from: $from, to: $to, groupBy: ["user", "month"], unit: USD, orderBy: AMOUNT_DESC, first: 100) { keys totals { unit amount } tasks } }',
      ),
    };
  });
}

/** The oldest month: closed, its entries sealed, archived. */
async function closeSealArchive(db: Database, month: Date, archiveDir: string) {
  const label = month.toISOString().slice(0, 7);
  const changes = new ChangesService(db, new AuditService(db));
  let t = performance.now();
  await new MonthCloseService(db, changes, new CommitmentsService(db)).close(label, CLI.actor, CLIENT, CLI.actor.label);
  const closeMs = ms(t);
  const part = `ledger_entry_y${label.slice(0, 4)}m${label.slice(5, 7)}`;
  const { rows } = await db.query<{ last: string; n: number }>(
    `SELECT max(id)::text AS last, count(*)::int AS n FROM ${part}`,
  );
  await db.query(
    `INSERT INTO ledger_seal_mark (id, max_id, marked_at) VALUES (1, $1, clock_timestamp() - interval '1 hour')
     ON CONFLICT (id) DO UPDATE SET max_id = EXCLUDED.max_id, marked_at = EXCLUDED.marked_at`,
    [rows[0]!.last],
  );
  t = performance.now();
  const sealed = await new LedgerSealer(db).round();
  const sealMs = ms(t);
  mkdirSync(archiveDir, { recursive: true });
  t = performance.now();
  const archived = await new ArchiveService(db, changes, { archiveDir, vendorName: 'bench' }).archive(
    label,
    CLI.actor,
    CLIENT,
  );
  return {
    month: label,
    tasks: archived.tasks,
    closeMs,
    seal: { entries: sealed, ms: sealMs, perSecond: Math.round(sealed / (sealMs / 1000)) },
    archive: { ms: ms(t), rows: archived.rows, files: archived.digests },
  };
}

/** The migration to partitions on a database of MIGRATE_TASKS tasks, and what a reader of task waited meanwhile. */
async function migration(url: string) {
  await migrate(url, () => {}, { upTo: BEFORE_PARTITIONS });
  const db = new Database(url, 4);
  let t = performance.now();
  await seedReports(db, MIGRATE_TASKS);
  const seedMs = ms(t);
  await db.close();
  const probe = new pg.Client({ connectionString: url });
  await probe.connect();
  let longest = 0;
  let stop = false;
  const probing = (async () => {
    while (!stop) {
      const s = performance.now();
      await probe.query('SELECT count(*) FROM (SELECT 1 FROM task LIMIT 1) x').catch(() => {});
      longest = Math.max(longest, performance.now() - s);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  t = performance.now();
  await migrate(url);
  const migrateMs = ms(t);
  stop = true;
  await probing;
  await probe.end();
  return { tasks: MIGRATE_TASKS, seedMs, migrateMs, longestTaskReadWaitMs: Math.round(longest) };
}

async function main() {
  const speedAtStart = speedProbe();
  await withScratchPostgres('history', ['max_connections=300', 'max_wal_size=4GB'], async (server, dir) => {
    const postgres = Number(readFileSync(path.join(dir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const emptyUrl = await database(server.url, 'empty');
    await migrate(emptyUrl);
    const history = new Database(server.url, 8);
    const t = performance.now();
    await seedHistory(history, log);
    const seedMs = ms(t);
    const bytes = await bytesPerTask(history);
    log(`history: ${JSON.stringify(bytes)} bytes per task`);
    const side: Record<string, { submissions: unknown[]; holdsPerSecond: number[] }> = {
      empty: { submissions: [], holdsPerSecond: [] },
      history: { submissions: [], holdsPerSecond: [] },
    };
    for (let round = 0; round < (PARTS.includes('submissions') ? 2 : 0); round++)
      for (const [label, url] of [
        ['empty', emptyUrl],
        ['history', server.url],
      ] as const) {
        side[label]!.submissions.push(await submissions(url, postgres));
        side[label]!.holdsPerSecond.push(await holdsPerSecond(url));
        log(`${label}: ${JSON.stringify(side[label])}`);
      }
    const months = seededMonths();
    const reportMonth = months[months.length - 2]!;
    const reportFigures = PARTS.includes('reports')
      ? { empty: await reports(emptyUrl, reportMonth), history: await reports(server.url, reportMonth) }
      : undefined;
    log(`reports: ${JSON.stringify(reportFigures)}`);
    const oldest = PARTS.includes('archive')
      ? await closeSealArchive(history, months[0]!, path.join(dir, 'archive'))
      : undefined;
    log(`oldest month: ${JSON.stringify(oldest)}`);
    await history.close();
    const migrated = PARTS.includes('migration') ? await migration(await database(server.url, 'before')) : undefined;
    log(`migration: ${JSON.stringify(migrated)}`);
    publish('history', {
      machine: `${machine()}, PostgreSQL 18 embedded, fsync on`,
      date: new Date().toISOString(),
      speedProbeMs: { start: speedAtStart, end: speedProbe() },
      tasks: HISTORY_TASKS,
      seedMs,
      bytesPerTask: { ...bytes, litellmSpendLogRow: 6300 },
      submissionsAt500PerSecond: { empty: side.empty!.submissions, history: side.history!.submissions },
      holdsPerSecond: { empty: side.empty!.holdsPerSecond, history: side.history!.holdsPerSecond },
      reports: reportFigures,
      oldestMonth: oldest,
      migration: migrated,
    });
  });
}

await main();
