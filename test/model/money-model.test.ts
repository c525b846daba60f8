/**
 * The money model's tester in the suite (decisions §16; test/model/): a bounded budget of random
 * sequences of every operation against two real gateways on one PostgreSQL (its own, so that a
 * fault can restart it) and against the reference model, the invariants after every step. The seed
 * is printed; `npm run check:money -- --seed S` replays a failure (add `--path P` from the report
 * for the shrunk sequence alone). MONEY_SEED and MONEY_RUNS set them here.
 */
import { checkMoney } from './check.js';
import { Server } from './system.js';

let server: Server;
beforeAll(async () => {
  server = await Server.start();
}, 60_000);
afterAll(() => server?.stop());

test('random sequences of every operation over two instances and faults: the books agree with the model and with themselves', async () => {
  const seed = Number(process.env.MONEY_SEED ?? Date.now() % 2 ** 31);
  const runs = Number(process.env.MONEY_RUNS ?? 20);
  process.stdout.write(
    `money model: seed ${seed}, ${runs} sequences (replay: npm run check:money -- --seed ${seed} --runs ${runs})\n`,
  );
  const stats = await checkMoney({ server, seed, runs, maxCommands: 40, databaseFaults: true });
  process.stdout.write(
    `money model: ${stats.operations} operations, ${stats.states.size} distinct states, 0 disagreements\n`,
  );
  expect(stats.operations).toBeGreaterThan(runs);
}, 600_000);
