/**
 * The money model's tester in the suite (decisions §16; test/model/): a bounded budget of random
 * sequences of every operation against two real gateways on one PostgreSQL (its own, so that a
 * fault can restart it) and against the reference model, the invariants after every step. The seed
 * is printed; `npm run check:money -- --seed S` replays a failure (add `--path P --replay-path R`
 * from the report for the shrunk sequence alone). MONEY_SEED and MONEY_RUNS set them here. MONEY_SECONDS bounds
 * the time in which sequences start, and shrinking has three minutes more: a slow machine or a long
 * shrink ends with its report, never with the suite's timeout (which leaves the run going).
 */
import { checkMoney } from './check.js';
import { Server } from './system.js';

const seconds = Number(process.env.MONEY_SECONDS ?? 300);
const SHRINK_MS = 180_000;
/** The sequence or shrinking step under way at the deadline may still run for a while. */
const TIMEOUT_MS = seconds * 1000 + SHRINK_MS + 240_000;

let server: Server;
beforeAll(async () => {
  server = await Server.start();
}, 60_000);
afterAll(() => server?.stop());

test(
  'random sequences of every operation over two instances and faults: the books agree with the model and with themselves',
  async () => {
    const seed = Number(process.env.MONEY_SEED ?? Date.now() % 2 ** 31);
    const runs = Number(process.env.MONEY_RUNS ?? 20);
    process.stdout.write(
      `money model: seed ${seed}, ${runs} sequences (replay: npm run check:money -- --seed ${seed} --runs ${runs})\n`,
    );
    const deadline = Date.now() + seconds * 1000;
    const shrinkDeadline = deadline + SHRINK_MS;
    const stats = await checkMoney({
      server,
      seed,
      runs,
      maxCommands: 40,
      databaseFaults: true,
      deadline,
      shrinkDeadline,
    });
    process.stdout.write(
      `money model: ${stats.sequences} of ${runs} sequences within ${seconds} s, ${stats.operations} operations, ${stats.states.size} distinct states, 0 disagreements\n`,
    );
    expect(stats.sequences).toBeGreaterThan(0);
    expect(stats.operations).toBeGreaterThan(stats.sequences ?? 0);
  },
  TIMEOUT_MS,
);
