/**
 * `npm run bench:reports`: seeds 1,000,000 settled tasks over 90 days and 50 projects (chat tasks
 * with their token charge lines, video and image tasks with seconds and counts in their price
 * basis; the daily roll-up built from them), then times a month's spend report grouped by
 * project × model × day in one run:
 *   - the full report (amount, tasks, unpriced, six token classes, video seconds, images) from the
 *     roll-up (what spendReport runs) and by GROUP BY over the raw task and charge-line rows;
 *   - the same with amount and task count only, both ways;
 *   - both through GraphQL over HTTP, to a gateway in its own process, with the answer parsed (as
 *     a dashboard reads it) and as received text, and the gateway's CPU per answer by thread: cold
 *     (each request a new one) and, for the full report, warm (the same again, answered from the
 *     report cache, decisions §22) and with its ETag (a 304). Dashboards polling while submissions
 *     settle: bench:dashboards.
 * Checks that the roll-up and the raw report agree, every measure to the last decimal. Then, by
 * who (decisions §7): each task has one of 100,000 end users and a tag, the roll-up by who is built by
 * the migration's own backfill, and a month's top-100 users by USD is timed (in process and over
 * GraphQL), with a month grouped by user in full and by tag for scale. Prints figures, writes
 * bench/results/reports.json; asserts nothing.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../src/database/embedded.js';
import { Database } from '../src/database/database.js';
import { machine, publish, withScratchPostgres } from './support.js';
import { threadCpuMs, threadCpuPer } from './proc.js';
import { BenchServers, waitFor } from './servers.js';
import { spendReport, type SpendRow } from '../src/reports/spend-report.js';
import { DAYS, PROJECTS, RAW_GROUPED, sealSeeded, seed, TASKS, USERS } from './reports-data.js';

const ADMIN = 'bench-admin-token-0123456789';
const METRICS_TOKEN = 'bench-metrics-token-0123456789';

async function main() {
  await withScratchPostgres('reports', [], async (server) => {
    const db = new Database(server.url, 4);
    const seedStarted = Date.now();
    await seed(db);
    const seedSeconds = (Date.now() - seedStarted) / 1000;
    await sealSeeded(db);

    const today = new Date(new Date().toISOString().slice(0, 10) + 'T00:00:00Z');
    const from = new Date(today.getTime() - 30 * 86_400_000);
    const query = { from, to: today, groupBy: ['project', 'model', 'day'] as Array<'project' | 'model' | 'day'> };

    // A second, coarser report over the same month: the roll-up's advantage grows as the output shrinks.
    const coarse = { ...query, groupBy: ['project', 'model'] as Array<'project' | 'model'> };
    const coarseRollup = await time(30, () => spendReport(db, coarse));
    const coarseRaw = await time(3, () => rawReport(db, from, today, ['project', 'model']));
    const coarseGroups = (await spendReport(db, coarse)).length;

    // Amount and task count only: the smallest report there is at this grouping.
    const slimQuery = { ...query, measures: [] as [] };
    const slimRollup = await time(30, () => spendReport(db, slimQuery));
    const slimRaw = await time(3, () => rawSlim(db, from, today));

    const rollupRows = await spendReport(db, query);
    const rollup = await time(30, () => spendReport(db, query));
    const raw = await time(3, () => rawReport(db, from, today, ['project', 'model', 'day']));
    const rawRows = await rawReport(db, from, today, ['project', 'model', 'day']);
    const asText = (r: SpendRow) =>
      [
        ...r.keys,
        r.unit,
        r.amount,
        r.tasks,
        r.unpricedTasks,
        r.inputTokens,
        r.outputTokens,
        r.cacheReadTokens,
        r.cacheWrite5mTokens,
        r.cacheWrite1hTokens,
        r.cacheWriteTokens,
        r.videoSeconds,
        r.images,
      ].join('|');
    const agree = rollupRows.length === rawRows.length && rollupRows.every((r, i) => asText(r) === asText(rawRows[i]!));

    const gw = await gatewayProcess(server.url);
    // Timed as a dashboard sees it (the answer parsed) and as received (its text), one after the other: cold
    // (each request a new one, under another alias, so nothing kept answers it: decisions §22), then warm
    // (the same request again) and warm with its ETag (a 304).
    const overGraphql = async (fields: string) => {
      let n = 0;
      const bodyOf = (alias = 'spendReport') =>
        JSON.stringify({
          query: `query($f: DateTime!, $t: DateTime!) { ${alias}: spendReport(from: $f, to: $t, groupBy: ["project", "model", "day"]) { ${fields} } }`,
          variables: { f: from.toISOString(), t: today.toISOString() },
        });
      const ask = (body = bodyOf(`cold${n++}`), etag?: string) =>
        fetch(`${gw.url}/graphql`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer ${ADMIN}`,
            ...(etag ? { 'if-none-match': etag } : {}),
          },
          body,
        });
      const cpuBefore = threadCpuMs(gw.pid);
      const parsed = await time(20, async () => {
        const answer = (await (await ask()).json()) as { data?: Record<string, unknown[]> };
        if (Object.values(answer.data ?? {})[0]?.length !== rollupRows.length)
          throw new Error(JSON.stringify(answer).slice(0, 500));
      });
      const text = await time(20, async () => {
        const res = await ask();
        if (res.status !== 200 || (await res.text()).length < rollupRows.length) throw new Error(`HTTP ${res.status}`);
      });
      // Where the gateway's CPU went per answer, by thread (main, WorkerThread: the reads thread, V8Worker: GC and
      // compiler helpers).
      const cpuMsPerAnswer = threadCpuPer(cpuBefore, threadCpuMs(gw.pid), 40);
      const same = bodyOf();
      const first = await ask(same);
      const etag = first.headers.get('etag') ?? undefined;
      await first.text();
      const warmCpuBefore = threadCpuMs(gw.pid);
      const warmText = await time(20, async () => {
        const res = await ask(same);
        if (res.status !== 200 || (await res.text()).length < rollupRows.length) throw new Error(`HTTP ${res.status}`);
      });
      const warmParsed = await time(20, async () => {
        const answer = (await (await ask(same)).json()) as { data?: Record<string, unknown[]> };
        if (Object.values(answer.data ?? {})[0]?.length !== rollupRows.length) throw new Error('short answer');
      });
      const warmCpuMsPerAnswer = threadCpuPer(warmCpuBefore, threadCpuMs(gw.pid), 40);
      const notModified = await time(20, async () => {
        const res = await ask(same, etag);
        await res.arrayBuffer();
        if (etag && res.status !== 304) throw new Error(`expected a 304, got ${res.status}`);
      });
      const answer = await (await ask()).text();
      return { parsed, text, cpuMsPerAnswer, warmText, warmParsed, warmCpuMsPerAnswer, notModified, answer };
    };
    const graphqlFull = await overGraphql(
      'keys totals { unit amount } tasks unpricedTasks videoSeconds images tokens { input output cacheRead cacheWrite5m cacheWrite1h cacheWrite }',
    );
    const graphqlSlim = await overGraphql('keys totals { unit amount } tasks');
    // The client's own share: the same answer's bytes from a bare server, fetched and parsed alike.
    const clientFloor = await bareServerTimes(graphqlFull.answer);

    // By who: last full month (month-aligned, as user reports are kept).
    const month = {
      from: new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth() - 1, 1)),
      to: new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), 1)),
    };
    const top100 = {
      ...month,
      groupBy: ['user'] as ['user'],
      unit: 'USD' as const,
      orderBy: 'amount' as const,
      first: 100,
      measures: [] as [],
    };
    const topUsers = await time(30, () => spendReport(db, top100));
    const topRows = await spendReport(db, top100);
    const topOverGraphql = await time(20, async () => {
      const res = await fetch(`${gw.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` },
        body: JSON.stringify({
          query:
            'query($f: DateTime!, $t: DateTime!) { spendReport(from: $f, to: $t, groupBy: ["user"], unit: USD, orderBy: AMOUNT_DESC, first: 100) { keys totals { unit amount } tasks } }',
          variables: { f: month.from.toISOString(), t: month.to.toISOString() },
        }),
      });
      const answer = (await res.json()) as { data?: { spendReport: unknown[] } };
      if (answer.data?.spendReport.length !== 100) throw new Error(JSON.stringify(answer).slice(0, 500));
    });
    // The same top 100 from raw tasks (exactness), and one project's top 100 (per-project rows).
    const { rows: rawTop } = await db.query<{ u: string; a: string }>(
      `SELECT coalesce(end_user, '(none)') AS u, sum(charge_amount)::text AS a FROM task
       WHERE unit = 'USD' AND accepted_at >= $1 AND accepted_at < $2 GROUP BY 1 ORDER BY sum(charge_amount) DESC, coalesce(end_user, '(none)') COLLATE "C" LIMIT 100`,
      [month.from, month.to],
    );
    const topEqualsRaw =
      JSON.stringify(rawTop.map((r) => [r.u, r.a])) === JSON.stringify(topRows.map((r) => [r.keys[0], r.amount]));
    const {
      rows: [oneProject],
    } = await db.query<{ id: string }>(`SELECT id::text FROM project ORDER BY name LIMIT 1`);
    const topOfProject = await time(30, () => spendReport(db, { ...top100, projectIds: [oneProject!.id] }));
    const topProjectUsers = await time(30, () => spendReport(db, { ...top100, groupBy: ['project', 'user'] }));
    const allUsers = await time(5, () => spendReport(db, { ...month, groupBy: ['user'], measures: [] }));
    const userGroups = (await spendReport(db, { ...month, groupBy: ['user'], measures: [] })).length;
    const byTag = await time(20, () => spendReport(db, { ...month, groupBy: ['tag:feature'], measures: [] }));
    const {
      rows: [sizes],
    } = await db.query<{
      tasks: string;
      by_user: string;
      by_user_all: string;
      user_months: string;
      by_key: string;
      by_tag: string;
    }>(
      `SELECT (SELECT count(*) FROM task)::text AS tasks, (SELECT count(*) FROM spend_rollup_user)::text AS by_user,
              (SELECT count(*) FROM spend_rollup_user_all)::text AS by_user_all,
              (SELECT count(DISTINCT (end_user, date_trunc('month', accepted_at AT TIME ZONE 'UTC'))) FROM task WHERE end_user IS NOT NULL)::text AS user_months,
              count(*) FILTER (WHERE dimension = 'apiKey')::text AS by_key, count(*) FILTER (WHERE dimension = 'tag')::text AS by_tag FROM spend_rollup_by`,
    );
    // The books as Prometheus scrapes them (/metrics/books, decisions §21): spend by project × model ×
    // unit × status over all 90 days, the budgets and their forecasts; the gateway's CPU per scrape.
    const scrape = () =>
      fetch(`${gw.url}/metrics/books`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } }).then(async (r) => {
        if (r.status !== 200 || !(await r.text()).includes('spendgate_spend_total{'))
          throw new Error(`HTTP ${r.status}`);
      });
    const scrapeCpuBefore = threadCpuMs(gw.pid);
    const booksScrape = await time(20, scrape);
    const booksScrapeCpu = threadCpuPer(scrapeCpuBefore, threadCpuMs(gw.pid), 21);
    const {
      rows: [rollupSize],
    } = await db.query<{ n: string }>(`SELECT count(*)::text AS n FROM spend_rollup`);
    await gw.close();

    const out = {
      machine: `${machine()}, PostgreSQL 18 embedded, default settings`,
      date: new Date().toISOString().slice(0, 10),
      tasks: TASKS,
      projects: PROJECTS,
      days: DAYS,
      seedSeconds,
      report: 'one month, grouped by project × model × day, every measure',
      groups: rollupRows.length,
      rollupMs: rollup,
      rawGroupByMs: raw,
      speedupRawVsRollupP50: Math.round(raw.p50 / rollup.p50),
      graphqlHttpMs: graphqlFull.parsed,
      graphqlHttpTextMs: graphqlFull.text,
      graphqlGatewayCpuMsPerAnswer: graphqlFull.cpuMsPerAnswer,
      graphqlWarmTextMs: graphqlFull.warmText,
      graphqlWarmParsedMs: graphqlFull.warmParsed,
      graphqlWarmGatewayCpuMsPerAnswer: graphqlFull.warmCpuMsPerAnswer,
      graphqlNotModifiedMs: graphqlFull.notModified,
      clientFloor: {
        what: "the same answer's bytes from a bare node:http server in its own process: what fetching and parsing them costs the client, whatever the server",
        ...clientFloor,
      },
      rollupEqualsRaw: agree,
      slim: {
        report: 'the same month and grouping, amount and task count only',
        rollupMs: slimRollup,
        rawGroupByMs: slimRaw,
        speedupRawVsRollupP50: Math.round(slimRaw.p50 / slimRollup.p50),
        graphqlHttpMs: graphqlSlim.parsed,
        graphqlHttpTextMs: graphqlSlim.text,
        graphqlGatewayCpuMsPerAnswer: graphqlSlim.cpuMsPerAnswer,
      },
      coarse: {
        report: 'one month, grouped by project × model, every measure',
        groups: coarseGroups,
        rollupMs: coarseRollup,
        rawGroupByMs: coarseRaw,
        speedupRawVsRollupP50: Math.round(coarseRaw.p50 / coarseRollup.p50),
      },
      byWho: {
        users: USERS,
        month: month.from.toISOString().slice(0, 7),
        rollupRows: {
          tasks: Number(sizes!.tasks),
          activeUserMonths: Number(sizes!.user_months),
          byUserPerProject: Number(sizes!.by_user),
          byUserOverProjects: Number(sizes!.by_user_all),
          byApiKey: Number(sizes!.by_key),
          byTag: Number(sizes!.by_tag),
        },
        topUsers: {
          report: "a month's top 100 users by USD (spendReport, in process)",
          ms: topUsers,
          first: topRows[0]?.keys[0],
          equalsRawGroupBy: topEqualsRaw,
          graphqlHttpMs: topOverGraphql,
        },
        topUsersOfOneProject: { report: "one project's top 100 users that month", ms: topOfProject },
        topProjectUsers: { report: 'the top 100 (project, user) pairs that month', ms: topProjectUsers },
        allUsers: { report: 'the same month, every user, amount and task count', groups: userGroups, ms: allUsers },
        byTag: { report: 'the same month by tag:feature, with (none)', ms: byTag },
        targets: { topUsersP50Ms: 50 },
      },
      booksScrape: {
        what: 'GET /metrics/books: spend and credits by project × model × unit × status over every day, budgets with forecasts',
        spendRollupRows: Number(rollupSize!.n),
        ms: booksScrape,
        gatewayCpuMsPerScrape: booksScrapeCpu,
      },
      targets: { p50Ms: 50, speedup: 100 },
    };
    publish('reports', out);
    await db.close();
  });
}

/**
 * The gateway in its own process, as it is deployed: the bench's client (this process) does not
 * share its main thread. Timed in the gateway's process, each 2.5 MB answer's fetch and parse
 * added a full garbage collection of that thread to the answer's time (25-30 ms; FINDINGS).
 */
async function gatewayProcess(databaseUrl: string): Promise<{ url: string; pid: number; close: () => Promise<void> }> {
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'spendgate-reports-gw-'));
  const child = spawn(process.execPath, ['dist/src/main.js'], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      LOG_LEVEL: 'warn',
      ADMIN_TOKEN: ADMIN,
      METRICS_TOKEN,
      POLLER_ENABLED: 'false',
      NODE_ENV: 'production',
      DATA_DIR: dataDir,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (
      await fetch(`${url}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (child.exitCode !== null || i > 600) throw new Error('the gateway did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    pid: child.pid!,
    close: async () => {
      child.kill('SIGTERM');
      await exited;
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * `answer` served by node's bare HTTP server in a process of its own (no GraphQL, no database),
 * timed by this client as the gateway is: parsed and as text.
 */
async function bareServerTimes(
  answer: string,
): Promise<{ parsedMs: Awaited<ReturnType<typeof time>>; textMs: Awaited<ReturnType<typeof time>>; bytes: number }> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'spendgate-reports-bare-'));
  const file = path.join(dir, 'answer.json');
  writeFileSync(file, answer);
  const serve = `const body = require('node:fs').readFileSync(process.env.FILE);
    require('node:http').createServer((q, r) => { q.resume(); q.on('end', () => r.writeHead(200, { 'content-type': 'application/json' }).end(body)); }).listen(Number(process.env.PORT), '127.0.0.1');`;
  const server = new BenchServers();
  server.start(['-e', serve], { FILE: file, PORT: String(port) });
  const url = `http://127.0.0.1:${port}/`;
  try {
    await waitFor(url);
    const ask = () => fetch(url, { method: 'POST', body: '{}' });
    const parsedMs = await time(20, async () => void (await (await ask()).json()));
    const textMs = await time(20, async () => void (await (await ask()).text()));
    return { parsedMs, textMs, bytes: Buffer.byteLength(answer) };
  } finally {
    server.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

const RAW_KEYS = {
  project: 'p.name',
  model: 't.model',
  day: "to_char((t.accepted_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD')",
};

/** The full report over raw rows, mapped like spendReport's rows so the two can be compared. */
async function rawReport(
  db: Database,
  from: Date,
  to: Date,
  groupBy: Array<keyof typeof RAW_KEYS>,
): Promise<SpendRow[]> {
  const keys = groupBy.map((k, i) => `${RAW_KEYS[k]} AS k${i}`).join(', ');
  const order = groupBy.map((k, i) => (k === 'day' ? `k${i}` : `k${i} COLLATE "C"`)).join(', ');
  const { rows } = await db.query(
    `SELECT * FROM (${RAW_GROUPED(keys, groupBy.map((_, i) => i + 1).join(', '), 't.accepted_at >= $1 AND t.accepted_at < $2', 'JOIN project p ON p.id = t.project_id')}) r
     ORDER BY ${order}, unit`,
    [from, to],
  );
  return rows.map((r) => ({
    keys: groupBy.map((_, i) => String(r[`k${i}`])),
    unit: r.unit,
    amount: r.amount,
    tasks: r.tasks,
    unpricedTasks: r.unpriced,
    inputTokens: r.input,
    outputTokens: r.output,
    cacheReadTokens: r.cache_read,
    cacheWrite5mTokens: r.cw5m,
    cacheWrite1hTokens: r.cw1h,
    cacheWriteTokens: r.cw,
    videoSeconds: r.seconds,
    images: r.images,
  }));
}

/** Amount and task count only, over raw task rows. */
function rawSlim(db: Database, from: Date, to: Date) {
  return db
    .query(
      `SELECT p.name AS k0, t.model AS k1, to_char((t.accepted_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS k2, t.unit,
              sum(t.charge_amount)::text AS amount, count(*)::int AS tasks
       FROM task t JOIN project p ON p.id = t.project_id
       WHERE t.settled_at IS NOT NULL AND t.accepted_at >= $1 AND t.accepted_at < $2
       GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
      [from, to],
    )
    .then((r) => r.rows);
}

async function time(runs: number, fn: () => Promise<unknown>) {
  await fn(); // warm-up
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = process.hrtime.bigint();
    await fn();
    ms.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  ms.sort((a, b) => a - b);
  const at = (q: number) => Math.round(ms[Math.min(ms.length - 1, Math.floor(q * ms.length))]! * 10) / 10;
  return { runs, p50: at(0.5), p95: at(0.95), min: at(0) };
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
