/**
 * `npm run check:money -- [--seed S] [--path P --replay-path R] [--runs N] [--commands K]`: the money model's
 * tester, standalone (its own embedded PostgreSQL). Prints the seed first; a disagreement prints
 * the shrunk sequence with the seed and path that replay it.
 * `npm run soak -- --minutes N`: runs sequences until the time is up and prints operations,
 * distinct states and disagreements.
 */
import { parseArgs } from 'node:util';
import { checkMoney, type CheckStats } from './check.js';
import { Server } from './system.js';

const { values } = parseArgs({
  options: {
    seed: { type: 'string' },
    path: { type: 'string' },
    'replay-path': { type: 'string' },
    runs: { type: 'string' },
    commands: { type: 'string' },
    minutes: { type: 'string' },
  },
});
const number = (name: string, text: string | undefined, fallback: number) => {
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text)) throw new Error(`--${name}: a whole number`);
  return Number(text);
};

// The process, and so both gateways, west of UTC (Pago Pago, UTC−11: its day behind UTC's until 11:00
// UTC); its PostgreSQL is ahead (system.ts). The books are UTC whatever either says (§16,
// src/database/utc.ts). Node applies TZ at once. In `npm run test:pg15` the suite runs so too.
process.env.TZ = process.env.MONEY_TZ ?? 'Pacific/Pago_Pago';

const server = await Server.start();
let code = 0;
try {
  const commands = number('commands', values.commands, 40);
  if (values.minutes === undefined) {
    const seed = number('seed', values.seed, Date.now() % 2 ** 31);
    process.stdout.write(`check:money seed ${seed}\n`);
    const stats = await checkMoney(
      {
        server,
        seed,
        runs: number('runs', values.runs, 20),
        maxCommands: commands,
        databaseFaults: true,
        ...(values.path ? { path: values.path } : {}),
        ...(values['replay-path'] ? { replayPath: values['replay-path'] } : {}),
      },
      { operations: 0, states: new Set(), kinds: new Map() },
    );
    process.stdout.write(
      `check:money: ${stats.operations} operations, ${stats.states.size} distinct states, 0 disagreements\n${kindsOf(stats)}\n`,
    );
  } else {
    const until = Date.now() + number('minutes', values.minutes, 10) * 60_000;
    const stats: CheckStats = { operations: 0, states: new Set(), kinds: new Map() };
    const disagreements: string[] = [];
    let runs = 0;
    while (Date.now() < until) {
      const seed = Date.now() % 2 ** 31;
      try {
        await checkMoney({ server, seed, runs: 1, maxCommands: commands, databaseFaults: true }, stats);
      } catch (error) {
        disagreements.push(`seed ${seed}: ${describe(error).split('\n').slice(0, 16).join('\n')}`);
        process.stdout.write(`DISAGREEMENT ${disagreements.at(-1)}\n`);
      }
      runs += 1;
      process.stdout.write(
        `soak: ${runs} sequences, ${stats.operations} operations, ${stats.states.size} distinct states, ${disagreements.length} disagreements\n`,
      );
    }
    process.stdout.write(`${kindsOf(stats)}\n`);
    code = disagreements.length ? 1 : 0;
  }
} catch (error) {
  process.stdout.write(`${describe(error)}\n`);
  code = 1;
} finally {
  await server.stop();
}
process.exit(code);

/** How often each kind of operation ran: what a run covered. */
function kindsOf(stats: CheckStats): string {
  return `by kind: ${[...(stats.kinds ?? new Map<string, number>())]
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ${n}`)
    .join(', ')}`;
}

/** fast-check's report, and the disagreement itself (its cause). */
function describe(error: unknown): string {
  const cause = (error as { cause?: unknown }).cause;
  return `${(error as Error).message}${cause ? `\nbecause: ${(cause as Error).message ?? String(cause)}` : ''}`;
}
