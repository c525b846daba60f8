/**
 * The model-based tester (decisions §16): random sequences of every operation (the *-commands.ts
 * files, weighed in workload.ts) run against two real gateway instances on one PostgreSQL and
 * against the reference model (money-model.ts), the invariants (invariants.ts) checked after every
 * step, ledger and audit verified at the end. A failing sequence is shrunk by fast-check and
 * printed with the seed and path that replay it.
 */
import fc from 'fast-check';
import { monthBefore } from './catalog-model.js';
import { newEnv, type Env } from './commands.js';
import { commandsArb } from './workload.js';
import { checkAtEnd, checkInvariants } from './invariants.js';
import { Real } from './real.js';
import { startSystem, type Server } from './system.js';
import { waitForDayTurn } from './clock.js';

export interface CheckOptions {
  server: Server;
  seed: number;
  runs: number;
  maxCommands: number;
  /** replays one counterexample (fast-check's path) */
  path?: string;
  /** with `path`: the counterexample's replayPath, which commands of the sequence ran */
  replayPath?: string;
  /** restart PostgreSQL among the faults (a server of the tester's own) */
  databaseFaults: boolean;
  /** Starts no sequence past this time (ms since the epoch): a bounded run's budget. */
  deadline?: number;
  /** Starts no shrinking step past this time: a failure is reported, shrunk as far as it got. */
  shrinkDeadline?: number;
}

export interface CheckStats {
  operations: number;
  /** sequences started (shrinking steps included) */
  sequences?: number;
  states: Set<string>;
  /** operations run, by kind (the name before the arguments) */
  kinds?: Map<string, number>;
}

function months(now = new Date()): { current: string; previous: string } {
  const current = now.toISOString().slice(0, 7);
  return { current, previous: monthBefore(current) };
}

/** A state, as distinct states are counted: what each kind of thing is, not the amounts. */
function stateOf(env: Env): string {
  const m = env.model;
  const count = <T>(xs: T[], key: (x: T) => string) =>
    Object.entries(xs.reduce<Record<string, number>>((a, x) => ((a[key(x)] = (a[key(x)] ?? 0) + 1), a), {}))
      .sort()
      .join(',');
  return [
    count(m.tasks, (t) => `${t.state}${t.resolved ? '+' : ''}`),
    count([...m.budgets.values()], (b) => `${b.period}${b.scope}${b.hard}`),
    count(m.statements.items, (i) => `${i.class}/${i.state}`),
    [...m.closed].sort().join(),
    [...m.archived].join(),
    m.gone.size,
  ].join('|');
}

/** Runs `runs` random sequences (or replays one); throws fast-check's report on a disagreement. */
export async function checkMoney(
  options: CheckOptions,
  stats: CheckStats = { operations: 0, states: new Set() },
): Promise<CheckStats> {
  // MONEY_TRACE=1: each operation on stderr with the seconds since its sequence began (where time goes)
  let began = Date.now();
  const trace = (what: string) =>
    process.env.MONEY_TRACE &&
    process.stderr.write(`[${((Date.now() - began) / 1000).toFixed(1)} s] ${what.slice(0, 160)}\n`);
  let failed = false;
  const after = async (env: Env, real: Real, what: string) => {
    stats.operations += 1;
    trace(what);
    const kind = what.replace(/\(.*$/s, '');
    stats.kinds?.set(kind, (stats.kinds.get(kind) ?? 0) + 1);
    await checkInvariants(env, real);
    stats.states.add(stateOf(env));
  };
  await fc.assert(
    fc.asyncProperty(
      commandsArb(options.databaseFaults ? options.server : null, options.maxCommands, after, options.replayPath),
      async (commands) => {
        // Past its time a run passes untried: no new sequence, and shrinking keeps what it has.
        const pastDeadline = () => Date.now() > ((failed ? options.shrinkDeadline : options.deadline) ?? Infinity);
        if (pastDeadline()) return;
        const wait = waitForDayTurn(Date.now());
        if (wait > 0) {
          process.stderr.write(`waiting ${Math.round(wait / 1000)} s for the UTC day to turn before a sequence\n`);
          await new Promise((r) => setTimeout(r, wait));
          if (pastDeadline()) return;
        }
        // Read per sequence: a run that went past a month's end builds the next sequence for the new month.
        const { current, previous } = months();
        stats.sequences = (stats.sequences ?? 0) + 1;
        began = Date.now();
        trace(`sequence ${stats.sequences}`);
        const sys = await startSystem(options.server);
        const real = new Real(sys);
        const env = newEnv(current, previous);
        try {
          await fc.asyncModelRun(() => ({ model: env, real }), commands);
          await checkAtEnd(real);
        } catch (error) {
          // The first failure as it happened: shrinking can end on another (a setup that failed once
          // the database was in trouble), and then this line is the one to read.
          if (!failed)
            process.stderr.write(`first failure, sequence ${stats.sequences}: ${String(error).slice(0, 4000)}\n`);
          failed = true;
          throw error;
        } finally {
          await sys.close();
        }
      },
    ),
    { seed: options.seed, numRuns: options.runs, ...(options.path ? { path: options.path } : {}), endOnFailure: false },
  );
  return stats;
}
