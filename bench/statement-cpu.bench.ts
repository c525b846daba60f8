/**
 * `npm run bench:statement-cpu`: what one call of the submission path costs PostgreSQL's backend
 * for a request alone, as at 500 requests a second (bench/FINDINGS.md). One connection; calls spaced by
 * BENCH_GAP_MS (default 2) so that each one wakes an idle backend, as an ordinary load does; the
 * backend's CPU read from /proc/<pid>/schedstat (nanoseconds) around each phase of BENCH_CALLS
 * calls (default 2,000), and PostgreSQL's other processes (WAL writer, checkpointer…) apart. The
 * floor first: `SELECT 1`, a one-row INSERT committed durably, the same without waiting for the
 * flush; a task row as the hold writes it, then with its hold entry (no locks, no budgets: where
 * the hold's cost lies). Then the hold (a chat estimate against two hard project budgets, as
 * bench:gateway sends) and the record of the vendor's acceptance, each by the batch function and
 * by the one-request function. BENCH_PHASES=hold,record runs only phases whose names start so (a
 * record phase records the tasks of the hold phase before it); BENCH_PAUSE_BEFORE=<phase> waits
 * 3 s before that phase, to attach a profiler to the printed backend pid. BENCH_SETUP_SQL is run after
 * the migrations, before the phases: a schema change tried without writing its migration. Prints figures and writes
 * bench/results/statement-cpu.json; asserts nothing.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Database } from '../src/database/database.js';
import { holdAlone, holdInBatch } from '../src/ledger/holds.js';
import { holdProbe, probeTaskValues } from './hold-probe.js';
import { machine, publish, speedProbe, withScratchPostgres } from './support.js';
import { childrenOf, runNs } from './proc.js';

const CALLS = Number(process.env.BENCH_CALLS ?? 2000);
const GAP_MS = Number(process.env.BENCH_GAP_MS ?? 2);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const speedAtStart = speedProbe();
  await withScratchPostgres(
    'statement-cpu',
    process.env.BENCH_PG_SETTINGS?.split(' ').filter(Boolean) ?? [],
    async (server, dir) => {
      const db = new Database(server.url, 1);
      if (process.env.BENCH_SETUP_SQL) await db.query(process.env.BENCH_SETUP_SQL);
      const postmaster = Number(readFileSync(path.join(dir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
      const backend = (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const others = () => childrenOf(postmaster).filter((p) => p !== backend);

      const { projectId, request } = await holdProbe(db);
      await db.query(`CREATE TABLE probe_row (id bigserial PRIMARY KEY, x text)`);

      const held: string[] = [];
      let n = 0;
      const record = (fn: 'one' | 'batch') => async () => {
        const id = held[n++]!;
        const vendorTaskId = String(9_000_000 + Number(id));
        const args = [id, `chatcmpl-${id}`, vendorTaskId, `{"id":"chatcmpl-${id}","taskId":${vendorTaskId}}`];
        const { rows } =
          fn === 'one'
            ? await db.prepared('record-one', 'SELECT spendgate_record_one($1, $2, $3, $4) AS id', args)
            : await db.prepared(
                'record-accepted',
                'SELECT spendgate_record_accepted($1::bigint[], $2::text[], $3::bigint[], $4::text[]) AS id',
                args.map((a) => [a]),
              );
        if (rows.length !== 1) throw new Error(`task ${id} not recorded`);
      };
      const hold = (path: 'alone' | 'batch') => async () => {
        const o = path === 'alone' ? await holdAlone(db, request()) : (await holdInBatch(db, [request()]))[0];
        if (o?.outcome !== 'held') throw new Error(`not held: ${o?.outcome ?? 'left to the batch function'}`);
        held.push(o.taskId);
      };
      // Where the hold's cost lies: the task row as the hold writes it, then with its hold entry, without
      // the locks, the budgets and their balances (what the one-request function adds to these).
      const taskRow = `INSERT INTO task (project_id, model, family, kind, unit, status, price_basis, price_book_version, exactness,
                                       estimate_amount, estimate_warnings, estimate_lines, hold_amount, accepted_at, updated_at)
                     VALUES ($1, $2, $3, $4, $5, 'submitting', $6, 1, 'EXACT', $7, '{}', '{}', $7, clock_timestamp(), clock_timestamp())
                     RETURNING id, accepted_at`;
      const taskValues = probeTaskValues(projectId);
      // Each hold phase makes the tasks its record phase records.
      const phases: Array<[string, () => Promise<unknown>]> = [
        ['SELECT 1', () => db.query('SELECT 1')],
        ['INSERT one row, durable commit', () => db.query('INSERT INTO probe_row (x) VALUES ($1)', ['x'])],
        ['INSERT one row, synchronous_commit off', () => db.query('INSERT INTO probe_row (x) VALUES ($1)', ['x'])],
        [
          'INSERT a task row as the hold writes it, durable commit',
          () => db.prepared('probe-task', taskRow, taskValues),
        ],
        [
          'INSERT a task row and its hold entry, one statement',
          () =>
            db.prepared(
              'probe-task-entry',
              `WITH t AS (${taskRow}) INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at)
         SELECT $1, t.id, 'hold', $5, $7, t.accepted_at FROM t`,
              taskValues,
            ),
        ],
        ['hold, batch function (spendgate_place_holds)', hold('batch')],
        ['record, batch function (spendgate_record_accepted)', record('batch')],
        ['hold, alone (spendgate_hold_one)', hold('alone')],
        ['record, alone (spendgate_record_one)', record('one')],
      ];
      const results: Record<string, { backendUs: number; otherProcessesUs: number; wallUs: number }> = {};
      const only = process.env.BENCH_PHASES?.split(',');
      console.error(`backend pid ${backend}`);
      for (const [name, call] of phases) {
        if (only && !only.some((o) => name.startsWith(o))) continue;
        if (name.startsWith('hold')) [held.length, n] = [0, 0];
        if (process.env.BENCH_PAUSE_BEFORE === name) {
          console.error(`phase ${name} starts in 3 s`);
          await sleep(3000);
        }
        if (name.includes('synchronous_commit off')) await db.query('SET synchronous_commit = off');
        for (let i = 0; i < 200; i++) await call(); // warm-up: plans cached, pages in memory
        const rest = others();
        const b0 = runNs(backend);
        const o0 = rest.reduce((s, p) => s + runNs(p), 0);
        let wall = 0;
        for (let i = 0; i < CALLS; i++) {
          await sleep(GAP_MS);
          const t = performance.now();
          await call();
          wall += performance.now() - t;
        }
        const b1 = runNs(backend);
        const o1 = rest.reduce((s, p) => s + runNs(p), 0);
        results[name] = {
          backendUs: Math.round((b1 - b0) / CALLS / 100) / 10,
          otherProcessesUs: Math.round((o1 - o0) / CALLS / 100) / 10,
          wallUs: Math.round((wall / CALLS) * 10_000) / 10,
        };
        console.error(
          `${name}: backend ${results[name].backendUs} µs, other PostgreSQL processes ${results[name].otherProcessesUs} µs, round trip ${results[name].wallUs} µs per call`,
        );
        if (name.includes('synchronous_commit off')) await db.query('RESET synchronous_commit');
      }
      // Whether the record's UPDATE stayed on its page (a HOT update writes no index entry).
      await db.query('SELECT pg_stat_force_next_flush()');
      const updates = (
        await db.query<{ updated: string; hot: string }>(
          `SELECT sum(n_tup_upd)::text AS updated, sum(n_tup_hot_upd)::text AS hot FROM pg_stat_user_tables WHERE relname LIKE 'task\\_%'`,
        )
      ).rows[0]!;
      console.error(`task updates ${updates.updated}, of them HOT ${updates.hot}`);
      publish('statement-cpu', {
        taskUpdates: { all: Number(updates.updated), hot: Number(updates.hot) },
        machine: `${machine()}, node ${process.version}, PostgreSQL 18 embedded (defaults: fsync on)`,
        date: new Date().toISOString().slice(0, 10),
        calls: CALLS,
        gapMs: GAP_MS,
        machineSpeedProbeMs: { start: speedAtStart, end: speedProbe() },
        perCall: results,
      });
      await db.close();
    },
  );
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
