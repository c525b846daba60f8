/**
 * `npm run bench:compare -- <base checkout>`: this checkout against another (built) one, in one run
 * on this machine, alternated (base, this, this, base, ...) so that a drift of the machine's speed
 * within the hour falls on both: hold throughput (`bench:budget`; this checkout's rate with a
 * request matching four budgets beside the base's with one) and chat submissions per second at 64
 * connections (`BENCH_SWEEP=64` of `bench:gateway`, with Portkey beside each as a control).
 * Each run is its own process on its own scratch PostgreSQL. Prints both and the ratios; writes
 * bench/results/compare.json. The other checkout's result files are left as they were.
 *
 * Make a base checkout with: git worktree add /tmp/base <commit> && ln -s $PWD/node_modules
 * /tmp/base/ && (cd /tmp/base && npm run build).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { machine, publish, speedProbe } from './support.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);

interface Budget {
  spendgateHot: { perSecond: number };
  spendgateSpread: { perSecond: number };
  spendgateHotFourBudgets?: { perSecond: number };
}
interface Sweep {
  rows: Array<{ spendgate: { requestsPerSecond: number }; portkey: { requestsPerSecond: number } }>;
}

/** Runs one bench of one checkout and returns its published result. */
function run<T>(checkout: string, script: string, result: string, env: Record<string, string> = {}): T {
  execFileSync(process.execPath, [`dist/bench/${script}.bench.js`], {
    cwd: checkout,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return JSON.parse(readFileSync(path.join(checkout, 'bench/results', `${result}.json`), 'utf8')) as T;
}

function main() {
  const base = process.argv[2];
  if (!base) throw new Error('usage: npm run bench:compare -- <path of a built base checkout>');
  const here = process.cwd();
  const keep = new Map<string, string>();
  for (const [dir, name] of [
    [base, 'budget'],
    [base, 'gateway-sweep'],
    [here, 'budget'],
    [here, 'gateway-sweep'],
  ] as const) {
    try {
      keep.set(
        path.join(dir, 'bench/results', `${name}.json`),
        readFileSync(path.join(dir, 'bench/results', `${name}.json`), 'utf8'),
      );
    } catch {
      // no earlier result to put back
    }
  }
  const speedAtStart = speedProbe();
  const rounds: Array<Record<string, unknown>> = [];
  const rate = {
    baseHot: [] as number[],
    hot: [] as number[],
    four: [] as number[],
    baseChat: [] as number[],
    chat: [] as number[],
    baseControl: [] as number[],
    control: [] as number[],
  };
  for (let i = 0; i < ROUNDS; i++) {
    // base, this, this, base: each order as often as the other.
    const order = i % 2 === 0 ? [base, here] : [here, base];
    for (const checkout of order) {
      const b = run<Budget>(checkout, 'budget', 'budget');
      // BENCH_COMPARE=budget: holds only (a quicker rerun after a change to the hold alone).
      const g =
        process.env.BENCH_COMPARE === 'budget'
          ? { rows: [{ spendgate: { requestsPerSecond: 0 }, portkey: { requestsPerSecond: 0 } }] }
          : run<Sweep>(checkout, 'gateway', 'gateway-sweep', { BENCH_SWEEP: '64' });
      const row = g.rows[0]!;
      const mine = checkout === here;
      (mine ? rate.hot : rate.baseHot).push(b.spendgateHot.perSecond);
      if (mine) rate.four.push(b.spendgateHotFourBudgets?.perSecond ?? 0);
      (mine ? rate.chat : rate.baseChat).push(row.spendgate.requestsPerSecond);
      (mine ? rate.control : rate.baseControl).push(row.portkey.requestsPerSecond);
      rounds.push({
        checkout: mine ? 'this' : 'base',
        holdsPerSecondOneBudget: b.spendgateHot.perSecond,
        holdsPerSecondFourBudgets: b.spendgateHotFourBudgets?.perSecond,
        chatPerSecond: row.spendgate.requestsPerSecond,
        portkeyPerSecond: row.portkey.requestsPerSecond,
      });
      console.error(JSON.stringify(rounds.at(-1)));
    }
  }
  for (const [file, text] of keep) writeFileSync(file, text);
  const mean = (xs: number[]) => Math.round(xs.reduce((a, b) => a + b, 0) / xs.length);
  const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
  const m = Object.fromEntries(Object.entries(rate).map(([k, v]) => [k, mean(v)])) as Record<keyof typeof rate, number>;
  publish('compare', {
    machine: machine(),
    date: new Date().toISOString().slice(0, 10),
    base: path.resolve(base),
    machineSpeedProbeMs: { start: speedAtStart, end: speedProbe() },
    rounds,
    means: m,
    ratios: {
      holdsFourBudgetsVsBaseOne: ratio(m.four, m.baseHot),
      holdsOneBudgetVsBase: ratio(m.hot, m.baseHot),
      chatVsBase: ratio(m.chat, m.baseChat),
      portkeyControl: ratio(m.control, m.baseControl),
    },
    targets: { withinPercent: 15 },
  });
}

main();
