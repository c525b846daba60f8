/**
 * `npm run bench:gateway`: chat submissions at 64 connections for a fixed duration, in one run,
 * side by side: the upstream simulator called directly (the floor), @portkey-ai/gateway in front of
 * the same simulator (a Node AI gateway that keeps no ledger), and spendgate with everything in the
 * submission path (auth, validation, pricing, budget hold, task and ledger writes on PostgreSQL with
 * default durability). Then a media mix on spendgate, and spendgate's latency at a fixed offered
 * rate of 500 requests/s (open loop), and CPU per request (gateway and PostgreSQL) at 100, 500 and
 * 2,000 requests/s open loop for spendgate and Portkey side by side (BENCH_CPU_RATES). Each server
 * is its own process; the load comes from this one.
 * Prints figures, writes bench/results/gateway.json and bench/results/gateway.svg; asserts nothing.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import pg from 'pg';
import { machine, publish, speedProbe, withScratchPostgres } from './support.js';
import { procDelta, procReading, type Servers } from './proc.js';
import { BenchServers, CHAT, MEDIA, benchProject, waitFor } from './servers.js';
import { OPEN_LOOP_CONNECTIONS, OPEN_LOOP_SECONDS, openLoopRun as openLoopOf } from './open-loop.js';
import { freePort } from '../src/database/embedded.js';

const autocannon = createRequire(import.meta.url)('autocannon') as (opts: Record<string, unknown>) => Promise<Result>;
interface Result {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; average: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}

const SECONDS = OPEN_LOOP_SECONDS;
/** Offered rate of the open-loop latency runs. */
const OPEN_RATE = Number(process.env.BENCH_OPEN_RATE ?? 500);
/** Offered rates at which spendgate's and Portkey's CPU per request are compared (bench/FINDINGS.md). */
const CPU_RATES = (process.env.BENCH_CPU_RATES ?? '100,500,2000').split(',').map(Number);
const CONNECTIONS = OPEN_LOOP_CONNECTIONS;
const METRICS_TOKEN = 'bench-metrics-token-0123456789';

/** The rig every gateway result names (main run and sweep alike). */
const RIG = `${machine()}, node ${process.version}, PostgreSQL 18 embedded (defaults: fsync on)`;

const servers = new BenchServers();
/** Where the CPU goes: the pid of each server (PostgreSQL: the postmaster, whose backends are summed). */
const processes: Servers = { spendgate: 0, postgres: 0, simulator: 0, portkey: 0 };

async function load(
  name: string,
  url: string,
  headers: Record<string, string>,
  bodies: string[],
  extra: Record<string, unknown> = {},
) {
  const opts = {
    url,
    method: 'POST',
    connections: CONNECTIONS,
    headers: { 'content-type': 'application/json', ...headers },
    ...(bodies.length === 1 ? { body: bodies[0] } : { requests: bodies.map((body) => ({ method: 'POST', body })) }),
    ...extra,
  };
  await autocannon({ ...opts, duration: 2 }); // warm-up
  const before = procReading(processes);
  const r = await autocannon({ ...opts, duration: SECONDS });
  const row = {
    name,
    requestsPerSecond: Math.round(r.requests.average),
    total: r.requests.total,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
    ...procDelta(before, procReading(processes), r.requests.total),
  };
  console.error(
    `${name}: ${row.requestsPerSecond} req/s, p50 ${row.p50Ms} ms, p99 ${row.p99Ms} ms, non-2xx ${row.non2xx}; CPU ms per request ${JSON.stringify(row.cpuMsPerRequest)}; ` +
      `waiting for a core, ms/s ${JSON.stringify(row.runqueueWaitMsPerSecond)}; machine % ${JSON.stringify(row.machinePercent)}`,
  );
  return row;
}

async function main() {
  const speedAtStart = speedProbe();
  await withScratchPostgres('gateway', process.env.BENCH_PG_SETTINGS?.split(' ') ?? [], async (pg, dir) => {
    try {
      const { key } = await benchProject(pg.url, 'bench');

      const [simPort, portkeyPort, gatewayPort] = [await freePort(), await freePort(), await freePort()];
      const sim = `http://127.0.0.1:${simPort}`;
      processes.simulator = servers.simulator(simPort).pid!;
      processes.portkey = servers.portkey(portkeyPort).pid!;
      processes.postgres = Number(readFileSync(path.join(dir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
      // BENCH_GATEWAY_FLAGS: extra node flags for spendgate's process alone (diagnostics, e.g. --trace-gc).
      const gatewayFlags = process.env.BENCH_GATEWAY_FLAGS?.split(' ').filter(Boolean) ?? [];
      processes.spendgate = servers.start(
        [
          ...(process.env.BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir=/tmp/gwprof'] : []),
          ...gatewayFlags,
          'dist/src/main.js',
        ],
        {
          PORT: String(gatewayPort),
          DATABASE_URL: pg.url,
          UPSTREAM_BASE_URL: sim,
          UPSTREAM_API_KEY: 'bench-vendor-key',
          ADMIN_TOKEN: 'bench-admin-token-0123456789', // required outside the sandbox
          METRICS_TOKEN, // /metrics answers only with it in production
          LOG_LEVEL: 'warn',
          POLLER_ENABLED: 'false',
          NODE_ENV: 'production',
        },
        gatewayFlags.length ? 'inherit' : 'ignore',
      ).pid!; // node's --trace-* output goes to stdout
      await waitFor(`${sim}/__sim/tasks`);
      await waitFor(`http://127.0.0.1:${portkeyPort}/`);
      await waitFor(`http://127.0.0.1:${gatewayPort}/healthz`);
      const gateway = `http://127.0.0.1:${gatewayPort}`;

      // The open-loop latency run goes first, on a fresh database that has a running server's spare
      // WAL segment files (see recycleWalSegments). autocannon's -R spends each
      // second's quota in a burst at the start of the second, which measures burst queueing; this
      // generator sends one request every 2 ms and times each from its scheduled start (so a slow
      // response delays nothing and hides nothing: no coordinated omission).
      // The gateway's own /metrics histogram, read around the measured run, splits the client's
      // latency into time inside spendgate's handler and time outside it (the machine, the network).
      // PostgreSQL's own account of its WAL flushes (count, time) and of the WAL segment files it
      // created is read around the run too.
      await pgSet(pg.url, 'track_wal_io_timing', 'on');
      const walFiles = await recycleWalSegments(pg.url);
      const inside = () => {
        let before = { buckets: new Map<string, number>(), wal: { fsyncs: 0, ms: 0, segmentsCreated: 0 } };
        return {
          before: async () => void (before = { buckets: await scrapeGateway(gateway), wal: await walCounters(pg.url) }),
          after: async () => {
            await new Promise((r) => setTimeout(r, 1200)); // backends publish their I/O counters at most once a second
            const wal = await walCounters(pg.url);
            const fsyncs = wal.fsyncs - before.wal.fsyncs;
            const buckets = await scrapeGateway(gateway);
            const gc = (k: string) => (buckets.get(k) ?? 0) - (before.buckets.get(k) ?? 0);
            return {
              ...serverShares(before.buckets, buckets),
              stagesPercentWithin: Object.fromEntries(
                ['hold', 'upstream', 'record'].map((stage) => [
                  stage,
                  serverShares(before.buckets, buckets, `${stage}:`).percentWithin,
                ]),
              ),
              gcPauses: { count: gc('gc_count'), totalMs: Math.round(gc('gc_sum') * 10_000) / 10 },
              eventLoopDelayMs: Object.fromEntries(
                ['p50', 'p99', 'max'].map((q) => [q, Math.round((buckets.get(`loop_${q}`) ?? 0) * 10_000) / 10]),
              ),
              walFlushes: {
                count: fsyncs,
                meanMs: fsyncs ? Math.round(((wal.ms - before.wal.ms) / fsyncs) * 1000) / 1000 : 0,
              },
              walSegmentsCreated: wal.segmentsCreated - before.wal.segmentsCreated,
            };
          },
        };
      };
      const chatUrl = `${gateway}/api-platform/v1/chat/completions`;
      const simChatUrl = `${sim}/api-platform/v1/chat/completions`;
      const auth = { authorization: `Bearer ${key}` };
      const vendorAuth = { authorization: 'Bearer bench-vendor-key' };
      const portkey = {
        url: `http://127.0.0.1:${portkeyPort}/v1/chat/completions`,
        headers: { ...vendorAuth, 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `${sim}/api-platform/v1` },
      };
      if (process.env.BENCH_SWEEP)
        return await sweep(
          process.env.BENCH_SWEEP.split(',').map(Number),
          speedAtStart,
          pg.url,
          { url: chatUrl, headers: auth },
          portkey,
        );
      const idle = await idleCpu();
      if (process.env.BENCH_ONLY === 'cpu') {
        // A quick rerun of part 2's question alone (CPU per request at the offered rates); publishes nothing.
        const rows = await cpuAtOrdinaryLoad(undefined, { url: chatUrl, headers: auth }, portkey);
        console.error(JSON.stringify({ idle, rows }, null, 1));
        return;
      }
      const openLoop = await openLoopRun('spendgate (chat)', chatUrl, auth, CHAT, OPEN_RATE, inside());
      // Diagnostic, not a configuration spendgate runs with: the same run with commits that do not
      // wait for their WAL flush, which shows how much of the tail is waiting for the disk.
      await pgSet(pg.url, 'synchronous_commit', 'off');
      const openLoopNoFlushWait = await openLoopRun(
        'spendgate (chat), diagnostic: synchronous_commit=off',
        chatUrl,
        auth,
        CHAT,
        OPEN_RATE,
        inside(),
      );
      await pgSet(pg.url, 'synchronous_commit', null);
      // The same generator against the simulator alone: the floor of that latency on this machine.
      const openLoopDirect = await openLoopRun('direct (simulator)', simChatUrl, vendorAuth, CHAT, OPEN_RATE);
      if (process.env.BENCH_ONLY === 'open') return; // a quick latency-only rerun; publishes nothing
      const cpuAtRates = await cpuAtOrdinaryLoad(openLoop, { url: chatUrl, headers: auth }, portkey);
      const openLoopBursty = await load('spendgate (chat, autocannon -R 500)', chatUrl, auth, [CHAT], {
        overallRate: 500,
      });
      const direct = await load('direct (simulator)', simChatUrl, vendorAuth, [CHAT]);
      const portkeyRow = await load('portkey', portkey.url, portkey.headers, [CHAT]);
      const spendgate = await load('spendgate (chat)', chatUrl, auth, [CHAT]);
      const media = await load('spendgate (media mix)', `${gateway}/api-platform/v1/generations`, auth, MEDIA);

      const out = {
        machine: RIG,
        date: new Date().toISOString().slice(0, 10),
        connections: CONNECTIONS,
        seconds: SECONDS,
        notes:
          'spendgate runs with LOG_LEVEL=warn and its background poller off (the poller is not on the submission path)',
        openLoopDatabase: `fresh, with ${walFiles} WAL segment files after a checkpoint, as a running server has`,
        machineSpeedProbeMs: { start: speedAtStart, end: speedProbe() },
        rows: [direct, portkeyRow, spendgate, media],
        openLoop500: openLoop,
        openLoop500DiagnosticNoCommitFlushWait: openLoopNoFlushWait,
        openLoop500Direct: openLoopDirect,
        idleCpuMsPerSecond: idle.cpuMsPerSecond,
        openLoop500AutocannonBursts: openLoopBursty,
        cpuPerRequestAtOfferedRates: cpuAtRates,
        ratios: {
          spendgateVsPortkey: Math.round((spendgate.requestsPerSecond / portkeyRow.requestsPerSecond) * 100) / 100,
          spendgateVsDirect: Math.round((spendgate.requestsPerSecond / direct.requestsPerSecond) * 100) / 100,
        },
        targets: { spendgateVsPortkey: 4, p99AtFiveHundredMs: 5, cpuMsPerSubmissionAtFiveHundred: 0.4 },
      };
      publish('gateway', out);
      writeFileSync('bench/results/gateway.svg', chart(out.rows));
    } finally {
      await servers.stop();
    }
  });
}

/**
 * BENCH_SWEEP=32,64,128 (a diagnostic, published apart as bench/results/gateway-sweep.json):
 * spendgate's and Portkey's chat throughput at each number of connections, alternated. A closed
 * loop's rate is connections / latency (Little's law): where it still rises with connections the
 * machine had cores to spare, and the rate at 64 was bound by each request's latency, not by CPU.
 */
async function sweep(levels: number[], speedAtStart: number, databaseUrl: string, spendgate: Target, portkey: Target) {
  const rows = [];
  // Commits per submission: each submission is a hold and a record, each batched with concurrent
  // ones into one transaction, so this is ~2 / the mean batch size (warm-up included).
  const commits = async () =>
    Number(
      (
        await withClient(databaseUrl, (c) =>
          c.query<{ n: string }>('SELECT sum(xact_commit)::text AS n FROM pg_stat_database'),
        )
      ).rows[0]!.n,
    );
  for (const connections of levels) {
    const before = await commits();
    const s = await load(`spendgate (chat), ${connections} connections`, spendgate.url, spendgate.headers, [CHAT], {
      connections,
    });
    const commitsPerSubmission =
      Math.round((((await commits()) - before) / (s.total * (1 + 2 / SECONDS))) * 1000) / 1000;
    console.error(`  ${commitsPerSubmission} commits per submission`);
    const p = await load(`portkey, ${connections} connections`, portkey.url, portkey.headers, [CHAT], { connections });
    rows.push({
      connections,
      spendgate: { ...s, commitsPerSubmission },
      portkey: p,
      spendgateVsPortkey: Math.round((s.requestsPerSecond / p.requestsPerSecond) * 100) / 100,
    });
  }
  publish('gateway-sweep', {
    machine: RIG,
    date: new Date().toISOString().slice(0, 10),
    seconds: SECONDS,
    machineSpeedProbeMs: { start: speedAtStart, end: speedProbe() },
    rows,
  });
}

/**
 * CPU per request at ordinary load (bench/FINDINGS.md): spendgate (its process and PostgreSQL's) and
 * Portkey (its process; it keeps no ledger and writes nothing) at each offered rate of CPU_RATES,
 * open loop, in the same run. spendgate's run at OPEN_RATE is the one above, not run again.
 */
async function cpuAtOrdinaryLoad(
  atOpenRate: Awaited<ReturnType<typeof openLoopRun>> | undefined,
  spendgate: Target,
  portkey: Target,
) {
  const rows = [];
  for (const rate of CPU_RATES) {
    const s =
      rate === OPEN_RATE && atOpenRate
        ? atOpenRate
        : await openLoopRun('spendgate (chat)', spendgate.url, spendgate.headers, CHAT, rate);
    const p = await openLoopRun('portkey', portkey.url, portkey.headers, CHAT, rate);
    const gatewayAndDatabase =
      Math.round(((s.cpuMsPerRequest.spendgate ?? 0) + (s.cpuMsPerRequest.postgres ?? 0)) * 1000) / 1000;
    rows.push({
      offeredPerSecond: rate,
      spendgate: {
        p50Ms: s.p50Ms,
        p99Ms: s.p99Ms,
        non200: s.non200,
        cpuMsPerRequest: s.cpuMsPerRequest,
        gatewayAndDatabaseMs: gatewayAndDatabase,
      },
      portkey: {
        p50Ms: p.p50Ms,
        p99Ms: p.p99Ms,
        non200: p.non200,
        cpuMsPerRequest: p.cpuMsPerRequest,
        gatewayMs: p.cpuMsPerRequest.portkey,
      },
    });
  }
  return rows;
}

/**
 * CPU milliseconds per second each server spends with no request at all (background rounds,
 * timers, PostgreSQL's own processes): at 100 requests a second, 10 ms/s of it is 0.1 ms per request.
 */
async function idleCpu() {
  await new Promise((r) => setTimeout(r, 1000));
  const before = procReading(processes);
  await new Promise((r) => setTimeout(r, 5000));
  const after = procReading(processes);
  const seconds = (after.at - before.at) / 1000;
  const perSecond = Object.fromEntries(
    Object.keys(after.cpuMs).map((k) => [k, Math.round(((after.cpuMs[k]! - before.cpuMs[k]!) / seconds) * 10) / 10]),
  );
  console.error(`idle: CPU ms per second ${JSON.stringify(perSecond)}`);
  return { cpuMsPerSecond: perSecond };
}

interface Target {
  url: string;
  headers: Record<string, string>;
}

/** Sets (or, with null, resets) a server setting for every session, through ALTER SYSTEM and a reload. */
async function pgSet(url: string, name: string, value: string | null) {
  await withClient(url, async (c) => {
    await c.query(value === null ? `ALTER SYSTEM RESET ${name}` : `ALTER SYSTEM SET ${name} = '${value}'`);
    await c.query('SELECT pg_reload_conf()');
  });
  await new Promise((r) => setTimeout(r, 300)); // each backend applies it before its next statement
}

/**
 * WAL flushes (fsyncs) so far and the milliseconds they took, and the WAL segment files created
 * (pg_stat_io's `init` context: a new 16 MB file, written full of zeros while every commit waits).
 */
async function walCounters(url: string): Promise<{ fsyncs: number; ms: number; segmentsCreated: number }> {
  const { rows } = await withClient(url, (c) =>
    c.query<{ fsyncs: string; ms: string; created: string }>(
      `SELECT coalesce(sum(fsyncs), 0)::text AS fsyncs, coalesce(sum(fsync_time), 0)::text AS ms,
              coalesce(sum(writes) FILTER (WHERE context = 'init'), 0)::text AS created
       FROM pg_stat_io WHERE object = 'wal'`,
    ),
  );
  return { fsyncs: Number(rows[0]!.fsyncs), ms: Number(rows[0]!.ms), segmentsCreated: Number(rows[0]!.created) };
}

/**
 * Gives a fresh cluster the spare WAL segment files a running server has. A fresh cluster has
 * one; every 16 MB of WAL it then creates the next one, writing it full of zeros while holding the
 * WAL write lock, and every commit waits: sampled from pg_stat_activity at 500 req/s, one
 * IO:WalInitWrite stall of ~45 ms every ~13 s. A server that has run through a checkpoint renames
 * old segments for reuse instead (min_wal_size keeps 5). Six switches and a checkpoint do that.
 */
async function recycleWalSegments(url: string): Promise<number> {
  return withClient(url, async (c) => {
    for (let i = 0; i < 6; i++) {
      await c.query(`SELECT pg_logical_emit_message(false, 'spendgate-bench', 'warm-up')`);
      await c.query('SELECT pg_switch_wal()');
    }
    await c.query('CHECKPOINT');
    const { rows } = await c.query<{ n: string }>('SELECT count(*)::text AS n FROM pg_ls_waldir()');
    return Number(rows[0]!.n);
  });
}

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** From /metrics: the chat route's latency histogram (cumulative counts by bound `le`) and GC pause totals. */
async function scrapeGateway(gateway: string): Promise<Map<string, number>> {
  const res = await fetch(`${gateway}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  if (!res.ok) throw new Error(`/metrics answered ${res.status}`); // the figures inside spendgate would all read 0
  const text = await res.text();
  const buckets = new Map<string, number>();
  // Garbage-collection pauses so far, all kinds (prom-client's default metrics), kept as two pseudo-bounds.
  for (const m of text.matchAll(/^nodejs_gc_duration_seconds_(sum|count)\{[^}]*\} ([\d.e+-]+)/gm)) {
    buckets.set(`gc_${m[1]}`, (buckets.get(`gc_${m[1]}`) ?? 0) + Number(m[2]));
  }
  // Event-loop delay since the previous scrape (prom-client resets its monitor on every scrape).
  for (const m of text.matchAll(/^nodejs_eventloop_lag_(p50|p99|max)_seconds ([\d.e+-]+)/gm))
    buckets.set(`loop_${m[1]}`, Number(m[2]));
  // Each submission stage's buckets, kept as "<stage>:<le>".
  for (const m of text.matchAll(/^spendgate_submission_stage_seconds_bucket\{le="([^"]*)",stage="(\w+)"\} (\d+)/gm)) {
    buckets.set(`${m[2]}:${m[1]}`, Number(m[3]));
  }
  for (const m of text.matchAll(/^spendgate_http_request_duration_seconds_bucket\{([^}]*)\} (\d+)/gm)) {
    const labels = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (labels.route !== '/api-platform/v1/chat/completions' || labels.status !== '200') continue;
    buckets.set(labels.le!, (buckets.get(labels.le!) ?? 0) + Number(m[2]));
  }
  return buckets;
}

/** Share of the requests between two scrapes that spendgate answered within each bound. */
function serverShares(before: Map<string, number>, after: Map<string, number>, prefix = '') {
  const delta = (le: string) => (after.get(prefix + le) ?? 0) - (before.get(prefix + le) ?? 0);
  const total = delta('+Inf');
  const share = (le: string) => (total ? Math.round((delta(le) / total) * 10_000) / 100 : 0);
  return {
    requests: total,
    percentWithin: { '2.5ms': share('0.0025'), '5ms': share('0.005'), '10ms': share('0.01'), '25ms': share('0.025') },
  };
}

/** The open-loop generator (open-loop.ts) over this run's servers. */
function openLoopRun(
  name: string,
  url: string,
  headers: Record<string, string>,
  body: string,
  rate: number,
  server?: Parameters<typeof openLoopOf>[6],
) {
  return openLoopOf(name, url, headers, body, rate, processes, server);
}

/** A small horizontal bar chart of throughput, with p50/p99 in the labels. */
function chart(rows: Array<{ name: string; requestsPerSecond: number; p50Ms: number; p99Ms: number }>): string {
  const width = 720;
  const barArea = 420;
  const max = Math.max(...rows.map((r) => r.requestsPerSecond));
  const bars = rows
    .map((r, i) => {
      const y = 50 + i * 44;
      const w = Math.max(2, Math.round((r.requestsPerSecond / max) * barArea));
      const fill = r.name.startsWith('spendgate') ? '#2f6f4f' : '#8a8f98';
      return `<text x="10" y="${y + 18}" font-size="13">${r.name}</text>
  <rect x="200" y="${y}" width="${w}" height="26" fill="${fill}"/>
  <text x="${208 + w}" y="${y + 18}" font-size="12">${r.requestsPerSecond.toLocaleString('en-US')} req/s · p50 ${r.p50Ms} ms · p99 ${r.p99Ms} ms</text>`;
    })
    .join('\n  ');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width + 180}" height="${70 + rows.length * 44}" font-family="sans-serif">
  <text x="10" y="24" font-size="15" font-weight="bold">Chat submissions, ${CONNECTIONS} connections, ${SECONDS} s (higher is better)</text>
  ${bars}
</svg>
`;
}

main().catch((error) => {
  console.error(error);
  servers.kill('SIGKILL');
  process.exit(1);
});
