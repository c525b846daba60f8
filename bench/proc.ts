/**
 * Where a run's time goes on this machine, read from /proc around it: the CPU each server spends
 * (PostgreSQL's backends summed under their postmaster), how long each waited for a core while
 * runnable (the scheduler's run-queue delay), and how busy, idle and stolen the machine's cores were.
 * Linux only; every figure reads 0 where /proc cannot be read.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Each server's pid by name; `postgres` is a postmaster, whose backends are summed with it. */
export type Servers = Record<string, number>;

/** A reading of every counter, taken before and after a run. */
export interface ProcReading {
  cpuMs: Record<string, number>;
  runqueueWaitMs: Record<string, Map<string, number>>;
  machine: { busy: number; idle: number; steal: number; total: number };
  at: number;
}

function read(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** The fields of /proc/<pid>/stat after the command name (which may hold spaces). */
function statFields(pid: number): string[] | undefined {
  const stat = read(`/proc/${pid}/stat`);
  return stat?.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** A process's direct children (a postmaster's: PostgreSQL's backends). */
export function childrenOf(parent: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (/^\d+$/.test(entry) && Number(statFields(Number(entry))?.[1]) === parent) pids.push(Number(entry));
  }
  return pids;
}

/** The pid and, with `withChildren`, its direct children (PostgreSQL's backends). */
function family(pid: number, withChildren: boolean): number[] {
  if (!withChildren || !pid) return [pid];
  return [pid, ...childrenOf(pid)];
}

/**
 * CPU nanoseconds a process (all its threads) or one thread (`/task/<tid>`) has run so far: schedstat's first field, 0
 * once gone.
 */
export function runNs(pid: number, task = ''): number {
  return Number(read(`/proc/${pid}${task}/schedstat`)?.split(' ')[0] ?? 0);
}

/** CPU milliseconds used so far (user + system; USER_HZ is 100 on Linux), exited children included. */
function cpuMs(pids: number[], withReaped: boolean): number {
  let ticks = 0;
  for (const [i, pid] of pids.entries()) {
    const f = statFields(pid);
    if (!f) continue;
    ticks += Number(f[11]) + Number(f[12]) + (withReaped && i === 0 ? Number(f[13]) + Number(f[14]) : 0);
  }
  return ticks * 10;
}

/**
 * Milliseconds each thread of the pids has spent runnable but waiting for a core (schedstat's
 * 2nd field), by "pid/tid": a delta is taken over the threads alive at both readings, since a
 * process that exits (a PostgreSQL worker) takes its counter with it.
 */
function runqueueWaitMs(pids: number[]): Map<string, number> {
  const waits = new Map<string, number>();
  for (const pid of pids) {
    let threads: string[];
    try {
      threads = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const t of threads) {
      const wait = read(`/proc/${pid}/task/${t}/schedstat`)?.split(' ')[1];
      if (wait !== undefined) waits.set(`${pid}/${t}`, Number(wait) / 1e6);
    }
  }
  return waits;
}

function waitDelta(before: Map<string, number>, after: Map<string, number>): number {
  let ms = 0;
  for (const [thread, wait] of after) if (before.has(thread)) ms += wait - before.get(thread)!;
  return ms;
}

function machineTicks(): ProcReading['machine'] {
  const f = (read('/proc/stat') ?? 'cpu 0').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already inside user)
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = f;
  return {
    busy: user + nice + system + irq + softirq,
    idle: idle + iowait,
    steal,
    total: user + nice + system + idle + iowait + irq + softirq + steal,
  };
}

/** Every counter now. The load generator is this process. */
export function procReading(servers: Servers): ProcReading {
  const usage = process.cpuUsage();
  const groups = Object.entries(servers).map(([name, pid]) => [name, family(pid, name === 'postgres')] as const);
  return {
    cpuMs: {
      ...Object.fromEntries(groups.map(([name, pids]) => [name, cpuMs(pids, name === 'postgres')])),
      loadGenerator: (usage.user + usage.system) / 1000,
    },
    runqueueWaitMs: {
      ...Object.fromEntries(groups.map(([name, pids]) => [name, runqueueWaitMs(pids)])),
      loadGenerator: runqueueWaitMs([process.pid]),
    },
    machine: machineTicks(),
    at: performance.now(),
  };
}

const round = (x: number, places: number) => Math.round(x * 10 ** places) / 10 ** places;

/**
 * Between two readings: CPU ms per request by process; run-queue wait in ms per second of the run
 * by process (a process that waited 500 ms per second was runnable without a core half the time);
 * the machine's cores busy, idle and stolen by the host, in percent.
 */
export function procDelta(before: ProcReading, after: ProcReading, requests: number) {
  const seconds = Math.max(1e-3, (after.at - before.at) / 1000);
  const ticks = Math.max(1, after.machine.total - before.machine.total);
  const share = (k: 'busy' | 'idle' | 'steal') => round(((after.machine[k] - before.machine[k]) / ticks) * 100, 1);
  return {
    cpuMsPerRequest: Object.fromEntries(
      Object.keys(after.cpuMs).map((k) => [k, round((after.cpuMs[k]! - before.cpuMs[k]!) / Math.max(1, requests), 3)]),
    ),
    runqueueWaitMsPerSecond: Object.fromEntries(
      Object.keys(after.runqueueWaitMs).map((k) => [
        k,
        Math.round(waitDelta(before.runqueueWaitMs[k]!, after.runqueueWaitMs[k]!) / seconds),
      ]),
    ),
    machinePercent: { busy: share('busy'), idle: share('idle'), steal: share('steal') },
  };
}

/**
 * CPU milliseconds so far of one process's threads, summed by thread name: the main thread as
 * `main`, a worker thread as `WorkerThread`, V8's garbage-collection and compiler helpers as
 * `V8Worker`, libuv's pool as `libuv-worker` (schedstat's first field: time on a core, in ns).
 * A thread that exits between two readings takes its time with it.
 */
export function threadCpuMs(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    const name = Number(tid) === pid ? 'main' : (read(`/proc/${pid}/task/${tid}/comm`)?.trim() ?? 'unknown');
    out[name] = (out[name] ?? 0) + runNs(pid, `/task/${tid}`) / 1e6;
  }
  return out;
}

/** Per `count` (answers, requests): each thread name's CPU between two readings, those of 0.1 ms or more. */
export function threadCpuPer(
  before: Record<string, number>,
  after: Record<string, number>,
  count: number,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, ms] of Object.entries(after)) {
    const per = (ms - (before[name] ?? 0)) / count;
    if (per >= 0.1) out[name] = Math.round(per * 10) / 10;
  }
  return out;
}
