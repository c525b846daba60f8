/**
 * A gateway killed mid-request, always (decisions §4, §10, §16): the random tester draws this fault
 * as one operation of many (kill-commands.ts), so a run may draw none. Here a fixed sequence runs
 * it both ways against the model, the invariants after every step: the vendor accepted the task
 * and its answer died with the instance, or the vendor never got the request; retries under the
 * same Idempotency-Key (409 in progress, then 504 naming the task; another body 409, never a second
 * task); a budget held for the killed tasks until a person resolves them, one released, one charged.
 */
import { Decimal } from 'decimal.js';
import { SetBudget } from './budget-commands.js';
import { monthBefore } from './catalog-model.js';
import { RestartGateway, Submit, type Cmd, type Env } from './commands.js';
import { checkAtEnd, checkInvariants } from './invariants.js';
import { KillMidSubmission } from './kill-commands.js';
import { MoneyModel } from './money-model.js';
import { PollerRound } from './poller-commands.js';
import { Real } from './real.js';
import { Resolve } from './review-commands.js';
import { Server, startSystem, type System } from './system.js';

let server: Server;
let sys: System;
beforeAll(async () => {
  server = await Server.start();
  sys = await startSystem(server);
}, 120_000);
afterAll(async () => {
  await sys?.close();
  await server?.stop();
});

const image = { model: 'seedream-4.0' as const, resolution: '2K', n: 2 };
const video = { model: 'sora-2-pro' as const, duration: 10 as const };

test("a killed instance's submissions: held, then unknown with their holds kept, retried under their keys, resolved", async () => {
  const real = new Real(sys);
  const current = new Date().toISOString().slice(0, 7);
  const env: Env = {
    model: new MoneyModel(current, monthBefore(current)),
    keys: new Map(),
    files: new Set(),
    frozen: new Map(),
    refused: 0,
    chat: new Map(),
  };
  const steps: Cmd[] = [
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
  ];
  const ran: string[] = [];
  for (const step of steps) {
    await step.run(env, real);
    await checkInvariants(env, real);
    ran.push(String(step));
  }
  await checkAtEnd(real);
  const killed = env.model.tasks.filter((t) => t.ref.startsWith('gw-'));
  expect(killed.map((t) => [t.state, t.resolved])).toEqual([
    ['unknown', true],
    ['unknown', true],
  ]);
  expect(ran).toHaveLength(steps.length);
}, 180_000);
