/**
 * Fixed sequences of the tester's operations (decisions §16), for faults and schedules a random run
 * may not draw: each operation is one of many there. The same operations, the model and the
 * invariants after every step; a sequence's system of its own.
 */
import { Decimal } from 'decimal.js';
import { SetBudget } from './budget-commands.js';
import { monthBefore } from './catalog-model.js';
import { newEnv, RestartGateway, Submit, VendorOutcome, type Cmd, type Env } from './commands.js';
import { checkAtEnd, checkInvariants } from './invariants.js';
import { KillMidSubmission } from './kill-commands.js';
import { PollerRound, TimerRound } from './poller-commands.js';
import { Real } from './real.js';
import { Resolve } from './review-commands.js';
import { Server, startSystem } from './system.js';

let server: Server;
beforeAll(async () => {
  server = await Server.start();
}, 60_000);
afterAll(() => server?.stop());

/** Runs `steps` on a new system, the invariants after each and the ledger and audit verified at the end. */
async function runSequence(steps: Cmd[]): Promise<Env> {
  const sys = await startSystem(server);
  const real = new Real(sys);
  const current = new Date().toISOString().slice(0, 7);
  const env = newEnv(current, monthBefore(current));
  try {
    for (const step of steps) {
      if (!step.check(env)) throw new Error(`${step}: not applicable here`);
      await step.run(env, real);
      await checkInvariants(env, real);
    }
    await checkAtEnd(real);
    return env;
  } finally {
    await sys.close();
  }
}

const image = { model: 'seedream-4.0' as const, resolution: '2K', n: 2 };
const video = { model: 'sora-2-pro' as const, duration: 10 as const };

/**
 * A gateway killed mid-request (kill-commands.ts), both ways: the vendor accepted the task and its
 * answer died with the instance, or the vendor never got the request. Retries under the same
 * Idempotency-Key: 409 in progress, then 504 naming the task; another body 409; never a second
 * task. A budget holds for the killed tasks until a person resolves them, one released, one charged.
 */
test("a killed instance's submissions: held, then unknown with their holds kept, retried under their keys, resolved", async () => {
  const env = await runSequence([
    new SetBudget(0, 'MONTHLY', 'PROJECT', new Decimal('5'), true),
    new Submit(0, 0, image, 0, 0, 'k1'),
    new KillMidSubmission(0, image, true, 'k2'),
    new Submit(1, 0, image, 0, 0, 'k2'), // the same request again: 504, its task named
    new Submit(1, 0, video, 0, 0, 'k2'), // another under its key: 409
    new KillMidSubmission(1, video, false, 'k1'),
    new RestartGateway(),
    new PollerRound(1),
    new Resolve(0, 'RELEASE', null),
    new Resolve(0, 'CHARGE', new Decimal('0.07')),
  ]);
  const killed = env.model.tasks.filter((t) => t.ref.startsWith('gw-'));
  expect(killed.map((t) => [t.state, t.resolved])).toEqual([
    ['unknown', true],
    ['unknown', true],
  ]);
}, 180_000);

/**
 * The poller's schedule (poller-commands.ts): a round as the timer runs it polls a task a second
 * after its acceptance, then not again for a poll interval, though the vendor has finished it
 * meanwhile; a task accepted since is polled; a round whose tasks are all due settles the rest.
 */
test('a timer round polls each task once a second after its acceptance, then not for a poll interval', async () => {
  const env = await runSequence([
    new Submit(0, 0, image, 0, 0, null),
    new TimerRound(0), // polled: still processing
    new VendorOutcome(0, 'ready'),
    new Submit(1, 1, video, 0, 0, null),
    new VendorOutcome(1, 'failed'),
    new TimerRound(1), // the video's first poll: failed; the image's next is ten minutes away
    new PollerRound(0), // every task due: the image settles
  ]);
  expect(env.model.tasks.map((t) => t.state)).toEqual(['settled', 'failed']);
}, 180_000);
