/**
 * A gateway killed mid-request (decisions §4, §10, §16). A third instance, the real entry point as
 * a process of its own on the same database, takes a submission, holds it and sends it on, and is
 * killed (SIGKILL) before the vendor's answer is read: either the vendor never got the request
 * (the instance's vendor address takes the connection and answers nothing) or it accepted the task
 * and its answer was lost with the process. The client's connection breaks. Its retry with the
 * same Idempotency-Key on a live instance is told the first is still in progress (409), never a
 * second task; once both upstream timeouts and the grace have passed, a sweep (a poll round here)
 * makes the task unknown, its hold kept for review, and the retry is told so (504, naming it).
 * From then on the task is an unknown one like any other: resolved by a person (§10).
 */
import { createServer, type Server as NetServer, type Socket } from 'node:net';
import { PollerService } from '../../src/tasks/poller.service.js';
import { spawnGateway, type ChildGateway } from '../support/harness.js';
import type { Submission } from './catalog-model.js';
import { mediaAsk, request, type Cmd, type Env } from './commands.js';
import { submitOnce } from './clock.js';
import { PollerRound } from './poller-commands.js';
import { call, expectStatus, gql, simulatorKnobs, type Answer, type Real } from './real.js';

export class KillMidSubmission implements Cmd {
  constructor(
    readonly project: number,
    readonly body: Submission,
    /** whether the vendor got the request (and accepted the task) before the instance died */
    readonly vendorGotIt: boolean,
    readonly key: 'k1' | 'k2',
  ) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const { p, unit, amount, tags } = mediaAsk(env, real, this.project, this.body);
    // A key this project used already would be answered at once, from its first task: none is made.
    const key = env.keys.has(`${p.id}:${this.key}`) ? null : this.key;
    const candidate = { model: this.body.model, unit, user: null, tags, hold: amount };
    const silent = this.vendorGotIt ? null : await silentVendor();
    const gw = await spawnGateway(childEnv(real, silent?.url)).catch((error: unknown) => {
      silent?.close();
      throw error;
    });
    env.model.sweepAbandoned(); // a starting gateway sweeps, as its poll rounds do
    if (this.vendorGotIt) await simulatorKnobs(real, { hangRate: 1 });
    const arrived = real.sys.sim.received.submissions;
    const atVendor = () => (silent ? silent.requested() : real.sys.sim.received.submissions > arrived);
    try {
      const { res, answer, minute } = await submitOnce(env, real, p.id, candidate, () =>
        sendThenKill(gw, p.key, request(this.body), key, atVendor),
      );
      expectStatus(res, answer === 200 ? 0 : answer, `${this}: the client's answer`);
      if (answer !== 200) return;
      const ref = await newestTask(real, p.id);
      env.model.accept({ ref, project: p.id, ...candidate, viaKey: true, minute: await minute(ref) }).vendor = 'none';
      if (key) env.keys.set(`${p.id}:${key}`, { body: JSON.stringify([request(this.body), null, []]), ref });
      const retry = () =>
        call(
          real,
          0,
          'POST',
          '/api-platform/v1/generations',
          { key: p.key, body: request(this.body), headers: { 'idempotency-key': key! } },
          [504],
        );
      if (key) {
        const early = await retry();
        expectStatus(early, 409, `${this}: a retry while its instance's calls could still be running`);
        if (!early.text.includes('still in progress')) throw new Error(`${this}: the retry's 409 says ${early.text}`);
      }
      // Then no instance could still be calling the vendor for it: the next sweep makes it unknown.
      await new Promise((r) => setTimeout(r, real.sys.gateways[0]!.app.get(PollerService).abandonAfterMs + 200));
      await new PollerRound(0).run(env, real);
      if (key) {
        const late = await retry();
        expectStatus(late, 504, `${this}: a retry once it was swept`);
        if (!late.text.includes(`"gatewayTaskId":"${ref}"`))
          throw new Error(`${this}: the retry's 504 says ${late.text}`);
      }
    } finally {
      if (this.vendorGotIt) await simulatorKnobs(real, { hangRate: 0 });
      gw.proc.kill('SIGKILL');
      await gw.exited;
      silent?.close();
    }
  }
  toString = () =>
    `kill-mid-submission(${['alpha', 'beta'][this.project]}, ${JSON.stringify(this.body)}, ${this.vendorGotIt ? 'the vendor accepted it' : 'the vendor never got it'}, key ${this.key})`;
}

/** The model's gateways' environment for a process of its own (its port its own). */
function childEnv(real: Real, vendorUrl: string | undefined): Record<string, string> {
  const { PORT: _port, ...env } = real.gatewayEnv();
  const out = Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
  return vendorUrl ? { ...out, UPSTREAM_BASE_URL: vendorUrl } : out;
}

/**
 * The submission sent to `gw`, which is killed once the request is at the vendor: the client's
 * answer is a broken connection (status 0), or the refusal it got at once (402, 429).
 */
async function sendThenKill(
  gw: ChildGateway,
  key: string,
  body: unknown,
  idempotencyKey: string | null,
  atVendor: () => boolean,
): Promise<Answer> {
  const sent = fetch(`${gw.url}/api-platform/v1/generations`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
    },
    body: JSON.stringify(body),
  }).then(
    async (res) => ({ status: res.status, body: undefined, text: await res.text() }),
    (error: Error) => ({ status: 0, body: undefined, text: String(error.cause ?? error) }),
  );
  let answered = false;
  void sent.then(() => (answered = true));
  const giveUp = Date.now() + 60_000; // an answer that never comes is a defect too (real.ts)
  while (!answered && !atVendor()) {
    if (Date.now() > giveUp) throw new Error('the submission reached neither an answer nor the vendor within 60 s');
    await new Promise((r) => setTimeout(r, 2));
  }
  if (answered) return sent; // refused before any hold (402, 429): nothing to kill it in the middle of
  gw.proc.kill('SIGKILL');
  await gw.exited;
  return sent;
}

/** The newest task of a project, by the id GraphQL gives it (gw-N: the vendor never numbered it to us). */
async function newestTask(real: Real, project: string): Promise<string> {
  const res = await gql(
    real,
    `query($p: [ID!]) { tasks(filter: { projectIds: $p }, first: 1) { edges { node { taskId } } } }`,
    {
      p: [project],
    },
  );
  const edges = (res.data?.tasks as { edges: Array<{ node: { taskId: string } }> } | undefined)?.edges;
  const ref = edges?.[0]?.node.taskId;
  if (!ref?.startsWith('gw-')) throw new Error(`the killed submission's task: ${JSON.stringify(res)}`);
  return ref;
}

/** A vendor address that takes connections and never answers; `requested()`: whether a request came. */
async function silentVendor(): Promise<{ url: string; requested(): boolean; close(): void }> {
  const sockets = new Set<Socket>();
  let arrived = false;
  const server: NetServer = createServer((socket) => {
    sockets.add(socket);
    socket.on('data', () => (arrived = true));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    requested: () => arrived,
    close() {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}
