/**
 * Losing the database machine (decisions §17), with the reference setup of deploy/ha started here
 * on loopback: etcd, two Patroni nodes with PostgreSQL 15 in synchronous mode, HAProxy, and two
 * gateway processes whose DATABASE_URL names HAProxy, under a steady load (ha-load.ts) sent to a
 * vendor both share. Four rounds: a planned switchover; the leader's postgres killed; the leader's
 * whole node killed; and, once the old leader has rejoined as a standby (pg_rewind), the failover
 * back by killing the new leader's node. After each: submissions succeeded again within the
 * round's bound; every submission answered 200 is in the ledger with one hold and settles once;
 * every task in the ledger was answered 200 or named by a refusal; a refusal that named only a
 * submissionRef left nothing charged; no hard budget passed its limit; GraphQL reads (the reads
 * worker, the reports pool) answer; reconcile, ledger verify and audit verify are clean on the new
 * leader. The figures are printed for the notes.
 *
 * `npm run test:ha` (needs Debian's postgresql-15, patroni, etcd-server and haproxy; .ci/run
 * installs them). Not part of `npm test`: it takes minutes, most of them waiting for Patroni.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Database } from '../../src/database/database.js';
import { migrate } from '../../src/database/migrate.js';
import { ProjectsService } from '../../src/projects/projects.service.js';
import { createSimulator } from '../../src/simulator/simulator.js';
import { ADMIN, eventually, hardBudget, http, spawnGateway, type ChildGateway } from '../support/harness.js';
import { HaCluster, type NodeName } from './ha-cluster.js';
import { Load, type Client } from './ha-load.js';

/** Patroni's dcs settings in deploy/ha/patroni.yml. */
const TTL_S = 20;
const LOOP_WAIT_S = 2;
const VENDOR_KEY = 'vk-ha-0123456789abcdef';
/** How far the standby falls behind before a node kill. */
const STANDBY_BEHIND_MS = 700;
/** Room for 15 images (0.04 each) on the tight project of each round. */
const TIGHT_LIMIT = '0.60';

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const other = (n: NodeName): NodeName => (n === 'node1' ? 'node2' : 'node1');

let cluster: HaCluster;
let db: Database;
let sim: ReturnType<typeof createSimulator>;
const gateways: ChildGateway[] = [];
const figures: Record<string, unknown> = {};

beforeAll(async () => {
  cluster = await HaCluster.start();
  await migrate(cluster.url);
  sim = createSimulator({ apiKey: VENDOR_KEY, delayMs: 300 });
  const simUrl = await sim.app.listen({ port: 0, host: '127.0.0.1' });
  const env = {
    DATABASE_URL: cluster.url,
    UPSTREAM_BASE_URL: simUrl,
    UPSTREAM_API_KEY: VENDOR_KEY,
    ADMIN_TOKEN: ADMIN,
    POLL_INTERVAL_MS: '200',
    LOG_LEVEL: 'warn',
  };
  for (let i = 0; i < 2; i++)
    gateways.push(await spawnGateway({ ...env, DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'spendgate-ha-gw-')) }));
  db = new Database(cluster.url, 2);
}, 240_000);

afterAll(async () => {
  for (const gw of gateways) gw.proc.kill('SIGTERM');
  await Promise.all(gateways.map((g) => g.exited));
  await db?.close().catch(() => {});
  await sim?.app.close();
  await cluster?.stop();
  console.log(`failover figures (ms):\n${JSON.stringify(figures, null, 1)}`);
}, 60_000);

/** A project with a key; with a hard budget when `limit` is given. */
async function project(name: string, limit?: string): Promise<{ id: string; key: string }> {
  const projects = new ProjectsService(db);
  const p = await projects.create(name);
  if (limit) await hardBudget(gateways[0]!.url, p.id, limit);
  return { id: p.id, key: await projects.issueKey(p.id) };
}

async function cli(...args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, ['dist/src/cli/main.js', ...args], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: cluster.url },
  });
  return stdout;
}

interface TaskRow {
  id: string;
  upstream_task_id: string | null;
  status: string;
  submission_ref: string | null;
  project_id: string;
  holds: number;
  charges: number;
  releases: number;
}

/**
 * One round: the load runs, `fault` strikes the leader, the load runs on until submissions have
 * succeeded for 3 s after the last failure and the tight budget has refused one (or the bound has
 * long passed), then every check.
 */
async function round(name: string, boundMs: number, fault: (leader: NodeName) => void | Promise<void>) {
  const leader = await cluster.waitHealthy(120_000);
  const steady = await project(`${name}-steady`);
  const tight = await project(`${name}-tight`, TIGHT_LIMIT);
  const client = (p: { key: string }): Client[] => gateways.map((g) => ({ url: g.url, key: p.key }));
  const load = new Load(name, client(steady), client(tight));
  load.start();
  await sleep(2_500);
  const eventAt = load.now();
  await fault(leader);
  await eventually(
    async () => {
      const since = load.now() - eventAt;
      const f = load.figures(eventAt);
      // ...and until the tight budget has refused once: its limit is what the round checks below. A slow
      // switchover (a 6.5 s stall in CI at 01:30 UTC on 2026-12-02) left it 11 images of 15 without one.
      const tightRefused = load.submissions.some((s) => s.project === 'tight' && s.refusedByBudget);
      return (
        since > boundMs + 10_000 || (since > 6_000 && load.now() - eventAt - f.recoveredMs > 3_000 && tightRefused)
      );
    },
    boundMs + 20_000,
    250,
  );
  await load.stop();
  const f = load.figures(eventAt);
  const count = (project: string, what: (s: (typeof load.submissions)[number]) => boolean) =>
    load.submissions.filter((s) => s.project === project && what(s)).length;
  figures[name] = {
    leaderBefore: leader,
    leaderAfter: await cluster.leader(),
    ...f,
    steady200: count('steady', (s) => s.taskId !== undefined),
    tight200: count('tight', (s) => s.taskId !== undefined),
    tight402: count('tight', (s) => Boolean(s.refusedByBudget)),
  };
  console.log(`${name}: ${JSON.stringify(figures[name])}`);

  expect(f.recoveredMs).toBeLessThanOrEqual(boundMs);
  expect(f.longestGapMs).toBeLessThanOrEqual(boundMs);
  const subs = load.submissions;
  expect(subs.flatMap((s) => s.unexpected)).toEqual([]);

  // Every task answered 200 settles (the vendor says ready after 300 ms; the pollers charge it).
  const answered = new Map(subs.filter((s) => s.taskId !== undefined).map((s) => [String(s.taskId), s]));
  expect(answered.size).toBeGreaterThan(10);
  const rows = async () =>
    (
      await db.query<TaskRow>(
        `SELECT t.id::text, t.upstream_task_id::text, t.status::text, t.submission_ref::text, t.project_id::text,
                count(e.id) FILTER (WHERE e.kind = 'hold')::int AS holds,
                count(e.id) FILTER (WHERE e.kind = 'charge')::int AS charges,
                count(e.id) FILTER (WHERE e.kind = 'release')::int AS releases
         FROM task t LEFT JOIN ledger_entry e ON e.task_id = t.id
         WHERE t.project_id = ANY ($1::uuid[]) GROUP BY t.id`,
        [[steady.id, tight.id]],
      )
    ).rows;
  const tasks = await eventually(
    async () => {
      const all = await rows();
      const open = all.filter((t) => ['submitting', 'processing'].includes(t.status));
      return open.length === 0 ? all : undefined;
    },
    60_000,
    500,
  );

  const namedTasks = new Set(subs.flatMap((s) => s.gatewayTaskIds));
  const namedRefs = new Set(subs.flatMap((s) => s.refs));
  const byUpstream = new Map(tasks.filter((t) => t.upstream_task_id).map((t) => [t.upstream_task_id!, t]));
  for (const taskId of answered.keys()) {
    const t = byUpstream.get(taskId);
    expect({ taskId, status: t?.status, holds: t?.holds, charges: t?.charges }).toEqual({
      taskId,
      status: 'ready',
      holds: 1,
      charges: 1,
    });
  }
  const tally: Record<string, number> = {};
  for (const t of tasks) {
    const how = answered.has(t.upstream_task_id ?? '')
      ? 'answered 200'
      : namedTasks.has(`gw-${t.id}`)
        ? 'named by its gatewayTaskId'
        : t.submission_ref && namedRefs.has(t.submission_ref)
          ? 'named by its submissionRef'
          : 'never named';
    expect({ task: t.id, how }).not.toEqual({ task: t.id, how: 'never named' });
    tally[how] = (tally[how] ?? 0) + 1;
    expect(t.charges).toBeLessThanOrEqual(1);
    if (how === 'named by its submissionRef')
      expect({ status: t.status, charges: t.charges, releases: t.releases }).toEqual({
        status: 'rejected',
        charges: 0,
        releases: 1,
      });
  }
  Object.assign(figures[name] as object, { tasks: tally });
  console.log(`${name}: tasks in the ledger ${JSON.stringify(tally)}`);
  // One task a key: retries landed once (the unique index would refuse a second, but not a
  // rejected first one with the key freed; none of those may be charged).
  expect(tasks.filter((t) => t.status === 'ready').length).toBe(answered.size);

  // The tight budget: what it counts never passed its limit.
  const { rows: used } = await db.query<{ within: boolean; used: string }>(
    `SELECT (p.spent + p.held <= b."limit") AS within, (p.spent + p.held)::text AS used
     FROM budget b JOIN budget_period p ON p.budget_id = b.id WHERE b.project_id = $1`,
    [tight.id],
  );
  expect(used).toEqual([{ within: true, used: expect.any(String) }]);
  expect(subs.some((s) => s.project === 'tight' && s.refusedByBudget)).toBe(true);

  // The reads worker (tasks) and the reports pool (spendReport) followed the leader too.
  const today = new Date(new Date().toISOString().slice(0, 10));
  for (const g of gateways) {
    const read = await http<{ errors?: unknown }>(`${g.url}/graphql`, {
      key: ADMIN,
      body: {
        query: `query ($f: DateTime!, $t: DateTime!) {
          tasks(first: 3) { edges { node { taskId } } }
          spendReport(from: $f, to: $t) { totals { unit amount } }
        }`,
        variables: { f: today.toISOString(), t: new Date(today.getTime() + 86_400_000).toISOString() },
      },
    });
    expect({ status: read.status, errors: read.body.errors }).toEqual({ status: 200, errors: undefined });
  }

  expect(await cli('reconcile')).toMatch(/^reconcile: clean/);
  expect(await cli('ledger', 'verify')).toMatch(/^ledger verify: /);
  expect(await cli('audit', 'verify')).toMatch(/^audit verify: /);
  return { leader };
}

test('a planned switchover (patronictl): submissions succeed again within 10 s', async () => {
  await round('switchover', 10_000, (leader) => cluster.switchover(leader, other(leader)));
}, 300_000);

test("the leader's postgres killed (SIGKILL): within 15 s", async () => {
  await round('postgres-killed', 15_000, (leader) => cluster.killPostgres(leader));
}, 300_000);

let lost: NodeName;

/**
 * The leader's node killed while its standby lags by STANDBY_BEHIND_MS (its WAL receiver paused,
 * then killed with the WAL it had not read as the leader dies): the moment asynchronous replication
 * loses what it acknowledged, where synchronous replication made the commits wait.
 */
async function killBehindStandby(leader: NodeName): Promise<void> {
  cluster.pauseReplication(other(leader), 'SIGSTOP');
  await sleep(STANDBY_BEHIND_MS);
  cluster.killNode(leader);
  cluster.pauseReplication(other(leader), 'SIGKILL');
}

/**
 * The node-kill round without its assertions: which tasks answered 200 the new leader lacks, and
 * whether the vendor's statement of every accepted task lists each of them as billed_not_ours.
 */
async function asyncRound(name: string, steady: { id: string; key: string }) {
  const leader = (await cluster.leader())!;
  const load = new Load(
    name,
    gateways.map((g) => ({ url: g.url, key: steady.key })),
    [],
  );
  load.start({ steadyPerGateway: 4 });
  await sleep(5_000);
  const eventAt = load.now();
  await killBehindStandby(leader);
  await eventually(
    async () => load.now() - eventAt > 6_000 && load.now() - eventAt - load.figures(eventAt).recoveredMs > 3_000,
    60_000,
    250,
  );
  await load.stop();
  const answered = load.submissions.filter((s) => s.taskId !== undefined).map((s) => String(s.taskId));
  const { rows } = await db.query<{ upstream: string }>(
    'SELECT upstream_task_id::text AS upstream FROM task WHERE project_id = $1 AND upstream_task_id IS NOT NULL',
    [steady.id],
  );
  const ours = new Set(rows.map((r) => r.upstream));
  const lostTasks = answered.filter((id) => !ours.has(id));
  // The vendor bills every task it accepted: the statement names each, at 0.04 USD.
  const file = path.join(cluster.dir, `${name}-statement.csv`);
  const at = new Date().toISOString();
  writeFileSync(
    file,
    ['task_id,model,time,amount,unit', ...answered.map((id) => `${id},seedream-4.0,${at},0.04,USD`)].join('\n'),
  );
  await cli('vendor', 'import', file);
  const { rows: listed } = await db.query<{ id: string }>(
    `SELECT vendor_task_id::text AS id FROM vendor_recon_item WHERE class = 'billed_not_ours' AND vendor_task_id = ANY ($1::bigint[])`,
    [answered],
  );
  const listedIds = new Set(listed.map((r) => r.id));
  return {
    leaderBefore: leader,
    leaderAfter: await cluster.leader(),
    ...load.figures(eventAt),
    answered200: answered.length,
    lostAcknowledged: lostTasks.length,
    someLost: lostTasks.slice(0, 3),
    listedBilledNotOurs: listedIds.size,
    everyLostListed: lostTasks.every((id) => listedIds.has(id)),
  };
}
test("the leader's whole node killed (Patroni and postgres): within ttl + loop_wait + 10 s", async () => {
  await round('node-killed', (TTL_S + LOOP_WAIT_S + 10) * 1_000, (leader) => killBehindStandby((lost = leader)));
}, 300_000);

test('the old leader rejoins as a standby (pg_rewind), and the failover back works the same', async () => {
  cluster.startNode(lost);
  // Back as the synchronous standby of the new leader.
  expect(await cluster.waitHealthy(120_000)).toBe(other(lost));
  await round('failover-back', (TTL_S + LOOP_WAIT_S + 10) * 1_000, (leader) => killBehindStandby((lost = leader)));
  expect(await cluster.leader()).toBe(other(lost));
}, 400_000);

// Asynchronous replication (synchronous_mode: false): what a node kill loses. Reported, not
// asserted (decisions §17): HA_ASYNC=1 npm run test:ha.
(process.env.HA_ASYNC ? test : test.skip)(
  'asynchronous replication: acknowledged tasks a node kill loses',
  async () => {
    cluster.startNode(lost);
    await cluster.waitHealthy(120_000);
    cluster.setSynchronous(false);
    await eventually(async () => !(await cluster.members()).some((m) => m.role === 'sync_standby'), 30_000, 250);
    const report = await asyncRound('asynchronous', await project('async-steady'));
    figures.asynchronous = report;
    console.log(`asynchronous: ${JSON.stringify(report)}`);
  },
  400_000,
);
