/**
 * `npm run bench:dashboards [-- <base checkout>]`: what cached report answers (decisions §22) do for
 * dashboards, on the bench:reports data set (1,000,000 settled tasks, 50 projects, 90 days), this
 * checkout against a base one (a built checkout of the commit before, as bench:compare takes it;
 * without one, this checkout with REPORT_CACHE_MB=0), alternated base, this, this, base in one run.
 * Each round starts the round's gateway alone (in production mode, its poller on, in front of the
 * simulator completing every task after 300 ms) and measures:
 *   - the month to date by project × model × day (every measure) over GraphQL with a FINANCE service
 *     account's token (as a wallboard reads; the ADMIN_TOKEN's reads are audited each), as text,
 *     on books standing still: cold (each request a new one: its alias differs), warm (the same
 *     request again) and warm with If-None-Match (a 304);
 *   - 1 and then 20 dashboards polling that report every second (each at its own phase, holding its
 *     ETag as the console does) for BENCH_SECONDS while 200 chat submissions a second are accepted
 *     and settle in one project: the dashboards' answer times, how many were 304 or refused (503),
 *     the reads thread's CPU per second (what reports cost the gateway), and the submissions' p50/p99
 *     (BENCH_SECONDS, default 10, after 2 s of warm-up).
 * Prints figures and writes bench/results/dashboards.json; asserts nothing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'undici';
import { freePort } from '../src/database/embedded.js';
import { Database } from '../src/database/database.js';
import { OPEN_LOOP_SECONDS, openLoopRun } from './open-loop.js';
import { threadCpuMs } from './proc.js';
import { sealSeeded, seed } from './reports-data.js';
import { benchProject, CHAT, waitFor } from './servers.js';
import { machine, publish, withScratchPostgres } from './support.js';

const ADMIN = 'bench-admin-token-0123456789';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const FIELDS =
  'keys totals { unit amount } tasks unpricedTasks videoSeconds images tokens { input output cacheRead cacheWrite5m cacheWrite1h cacheWrite }';

type Single = Awaited<ReturnType<typeof singleAnswers>>;
type Polling = Awaited<ReturnType<typeof polling>>;
interface Run extends Single {
  round: number;
  checkout: string;
  one: Polling;
  twenty: Polling;
}

interface Gw {
  url: string;
  pid: number;
  stop: () => Promise<void>;
}

/** A gateway of `checkout` (its dist), alone on the database, with the simulator as its vendor. */
async function startGateway(checkout: string, databaseUrl: string, simPort: number, env: Record<string, string>) {
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'spendgate-dash-gw-'));
  const child: ChildProcess = spawn(process.execPath, ['dist/src/main.js'], {
    cwd: checkout,
    env: {
      ...process.env,
      PORT: String(port),
      DATABASE_URL: databaseUrl,
      UPSTREAM_BASE_URL: `http://127.0.0.1:${simPort}`,
      UPSTREAM_API_KEY: 'bench-vendor-key',
      ADMIN_TOKEN: ADMIN,
      LOG_LEVEL: 'warn',
      NODE_ENV: 'production',
      DATA_DIR: dataDir,
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${url}/healthz`);
  const stop = async () => {
    child.kill('SIGTERM');
    await exited;
    rmSync(dataDir, { recursive: true, force: true });
  };
  return { url, pid: child.pid!, stop } satisfies Gw;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? Math.round(s[Math.min(s.length - 1, Math.floor(p * s.length))]! * 10) / 10 : NaN;
};

/** The month to date by project × model × day; `alias` makes it another request (nothing kept answers it). */
function monthQuery(alias = 'spendReport') {
  const now = new Date();
  const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString();
  const to = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)).toISOString();
  return JSON.stringify({
    query: `query($f: DateTime!, $t: DateTime!) { ${alias}: spendReport(from: $f, to: $t, groupBy: ["project", "model", "day"]) { ${FIELDS} } }`,
    variables: { f: from, t: to },
  });
}

/** Who reads: a service account's token, as a wallboard or Grafana would (an ADMIN_TOKEN read is audited each time). */
let reader = ADMIN;

/** A FINANCE service account and its token, made through `gw`'s GraphQL as an owner would. */
async function serviceToken(gw: Gw): Promise<string> {
  const ask = async (query: string, variables = {}) => {
    const res = await fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as { data?: Record<string, Record<string, string>>; errors?: unknown };
    if (body.errors || !body.data) throw new Error(JSON.stringify(body.errors));
    return body.data;
  };
  const account = await ask('mutation { createServiceAccount(name: "wallboards", role: FINANCE) { id } }');
  const token = await ask('mutation($s: ID!) { createToken(name: "wallboard", serviceAccountId: $s) { secret } }', {
    s: account.createServiceAccount!.id,
  });
  return token.createToken!.secret!;
}

/** One report request, as text; the time to its last byte, its status and ETag. */
async function ask(pool: Pool, body: string, etag?: string) {
  const started = performance.now();
  const res = await pool.request({
    path: '/graphql',
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${reader}`,
      ...(etag ? { 'if-none-match': etag } : {}),
    },
    body,
  });
  const text = await res.body.text();
  if (res.statusCode !== 304 && (res.statusCode !== 200 || text.includes('"errors"')))
    throw new Error(text.slice(0, 300));
  return { ms: performance.now() - started, status: res.statusCode, etag: res.headers.etag as string | undefined };
}

/** Waits until no task is waiting to settle: the single answers are timed on books that stand still. */
async function settled(databaseUrl: string): Promise<void> {
  const db = new Database(databaseUrl, 1);
  try {
    for (let i = 0; i < 300; i++) {
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM task WHERE status IN ('submitting', 'processing')`,
      );
      if (rows[0]!.n === 0) return;
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await db.close();
  }
}

async function singleAnswers(gw: Gw) {
  const pool = new Pool(gw.url, { connections: 4 });
  try {
    const cold: number[] = [];
    for (let i = 0; i < 10; i++) cold.push((await ask(pool, monthQuery(`cold${gw.pid}x${i}`))).ms);
    const body = monthQuery();
    const first = await ask(pool, body);
    const warm: number[] = [];
    for (let i = 0; i < 20; i++) warm.push((await ask(pool, body)).ms);
    const notModified: number[] = [];
    let answered304 = 0;
    for (let i = 0; i < 20; i++) {
      const r = await ask(pool, body, first.etag);
      notModified.push(r.ms);
      if (r.status === 304) answered304++;
    }
    return {
      coldP50: pct(cold, 0.5),
      warmP50: pct(warm, 0.5),
      notModifiedP50: first.etag ? pct(notModified, 0.5) : null,
      answered304,
    };
  } finally {
    await pool.close();
  }
}

/** `count` dashboards polling the month report every second while 200 submissions a second settle. */
async function polling(gw: Gw, count: number, key: string) {
  const pool = new Pool(gw.url, { connections: count + 2 });
  const body = monthQuery();
  const times: number[] = [];
  let notModified = 0;
  let refused = 0;
  let polling = true;
  const dashboard = async (phase: number) => {
    await new Promise((r) => setTimeout(r, phase));
    let etag: string | undefined;
    while (polling) {
      const started = performance.now();
      const r = await ask(pool, body, etag);
      times.push(r.ms);
      if (r.status === 304) notModified++;
      else if (r.status === 200) etag = r.etag;
      else refused++;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 1000 - (performance.now() - started))));
    }
  };
  const before = threadCpuMs(gw.pid);
  const started = performance.now();
  const dashboards = Array.from({ length: count }, (_, i) => dashboard((i * 1000) / count));
  const load = await openLoopRun(
    'chat',
    `${gw.url}/api-platform/v1/chat/completions`,
    { authorization: `Bearer ${key}` },
    CHAT,
    200,
    {},
  );
  polling = false;
  await Promise.all(dashboards);
  const seconds = (performance.now() - started) / 1000;
  const after = threadCpuMs(gw.pid);
  await pool.close();
  const cpu = (name: string) => Math.round(((after[name] ?? 0) - (before[name] ?? 0)) / seconds);
  return {
    dashboards: count,
    answers: times.length,
    answerP50: pct(times, 0.5),
    answerP99: pct(times, 0.99),
    notModified,
    refused,
    readsThreadCpuMsPerSecond: cpu('WorkerThread'),
    mainThreadCpuMsPerSecond: cpu('main'),
    submissions: load,
  };
}

async function main() {
  const base = process.argv[2] ? path.resolve(process.argv[2]) : undefined;
  const here = process.cwd();
  await withScratchPostgres('dashboards', [], async (server) => {
    const db = new Database(server.url, 4);
    await seed(db);
    await sealSeeded(db);
    await db.close();
    const { key } = await benchProject(server.url, 'dashboards-load');
    const simPort = await freePort();
    const sim = spawn(
      process.execPath,
      ['dist/src/cli/main.js', 'simulate', '--port', String(simPort), '--delay-ms', '300'],
      {
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    await waitFor(`http://127.0.0.1:${simPort}/__sim/config`);
    const runs: Run[] = [];
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 === 0 ? ['base', 'this'] : ['this', 'base'];
        for (const which of order) {
          const gw = await startGateway(
            which === 'this' ? here : (base ?? here),
            server.url,
            simPort,
            which === 'base' && !base ? { REPORT_CACHE_MB: '0' } : {},
          );
          try {
            if (reader === ADMIN) reader = await serviceToken(gw);
            await settled(server.url);
            const single = await singleAnswers(gw);
            const one = await polling(gw, 1, key);
            const twenty = await polling(gw, 20, key);
            const run: Run = { round, checkout: which, ...single, one, twenty };
            console.log(JSON.stringify(run));
            runs.push(run);
          } finally {
            await gw.stop();
          }
        }
      }
    } finally {
      sim.kill('SIGTERM');
    }
    const of = (which: string, pick: (r: Run) => number) => runs.filter((r) => r.checkout === which).map(pick);
    const mid = (xs: number[]) => pct(xs, 0.5);
    const summary = Object.fromEntries(
      ['base', 'this'].map((which) => [
        which,
        {
          coldP50: mid(of(which, (r) => r.coldP50)),
          warmP50: mid(of(which, (r) => r.warmP50)),
          readsCpuOneDashboard: mid(of(which, (r) => r.one.readsThreadCpuMsPerSecond)),
          readsCpuTwentyDashboards: mid(of(which, (r) => r.twenty.readsThreadCpuMsPerSecond)),
          twentyAnswerP50: mid(of(which, (r) => r.twenty.answerP50)),
        },
      ]),
    );
    publish('dashboards', {
      machine: `${machine()}, PostgreSQL 18 embedded`,
      date: new Date().toISOString(),
      base: base ?? 'this checkout with REPORT_CACHE_MB=0',
      seconds: OPEN_LOOP_SECONDS,
      summary,
      runs,
    });
  });
}

await main();
