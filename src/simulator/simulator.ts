/**
 * The upstream simulator: the vendor's three paths, for sandbox mode, tests and benchmarks.
 * Tasks turn ready or failed after a configurable delay; ready chat tasks carry usage in the shape
 * of the model family's vendor (deterministic by seed); fault knobs inject latency, 5xx, hangs,
 * connection resets and malformed bodies. Every accepted task is recorded so tests can prove that
 * nothing was lost. Control endpoints live under /__sim.
 */
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { findRoute } from '../catalog/catalog.js';
import { estimateInputTokens } from '../pricing/token-estimate.js';
import { VENDOR_PATHS } from '../catalog/vendor-paths.js';
import { durable, loadJournal, openJournal } from './journal.js';
import type { SimTask } from './sim-task.js';
import { DEFAULT_KNOBS, prng, type SimulatorKnobs } from './simulator-knobs.js';

export { DEFAULT_KNOBS, prng, type SimulatorKnobs } from './simulator-knobs.js';

export type { SimTask };

export interface SimulatorOptions extends Partial<SimulatorKnobs> {
  /** When set, requests must carry `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  logger?: boolean;
  /**
   * A file where accepted tasks and forced outcomes are journaled, so that the tasks survive a
   * restart (the sandbox keeps it under DATA_DIR: a restarted `npm start` still answers polls of
   * earlier tasks). Tasks older than a week are dropped when the journal is read.
   */
  stateFile?: string;
}

export function createSimulator(options: SimulatorOptions = {}) {
  // Only knobs go into `knobs` (which /__sim/config returns): never the API key.
  const { apiKey, logger, stateFile, ...knobOptions } = options;
  const knobs: SimulatorKnobs = { ...DEFAULT_KNOBS, ...stripUndefined(knobOptions) };
  const tasks = stateFile ? loadJournal(stateFile) : new Map<number, SimTask>();
  const journal = stateFile ? openJournal(stateFile, tasks) : undefined;
  const hanging = new Set<FastifyReply>();
  let nextTaskId = Math.max(Date.now() * 1000, ...tasks.keys()); // unique across simulator restarts
  // Submissions that have arrived, counted before the latency knob holds them: a test can wait until
  // every request is at the vendor instead of guessing with a sleep.
  const received = { submissions: 0 };
  let chance = prng(knobs.seed);
  const app: FastifyInstance = Fastify({ logger: logger ?? false, bodyLimit: 64 * 1024 * 1024 });

  const authorised = (header: string | undefined) => !apiKey || header === `Bearer ${apiKey}`;
  const pause = () => (knobs.latencyMs > 0 ? new Promise((r) => setTimeout(r, knobs.latencyMs)) : undefined);

  async function submit(
    endpoint: 'chat' | 'generations',
    body: unknown,
    auth: string | undefined,
    reply: FastifyReply,
  ) {
    received.submissions += 1;
    await pause();
    if (!authorised(auth)) return reply.code(401).send({ code: 4010, message: 'invalid API key' });
    const request = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    const route = typeof request.model === 'string' ? findRoute(request.model) : undefined;
    if (!route || route.endpoint !== endpoint) {
      return reply.code(400).send({ code: 4000, message: `unknown model for this endpoint` });
    }
    if (chance() < knobs.errorRate) return reply.code(500).send({ code: 5000, message: 'simulated upstream error' });

    const taskId = ++nextTaskId;
    const now = Date.now();
    const task: SimTask = {
      id: `${route.kind === 'chat' ? 'ch' : route.kind === 'video' ? 'vd' : 'im'}_${taskId}`,
      taskId,
      model: route.id,
      kind: route.kind,
      family: route.family,
      acceptedAt: now,
      readyAt: now + knobs.delayMs,
      status: 'processing',
      request,
      promptEstimate: route.kind === 'chat' ? estimateInputTokens(request.messages) : 0,
      answered: false,
    };
    tasks.set(taskId, task);
    journal?.write(`${JSON.stringify({ task: durable(task) })}\n`);

    const roll = chance();
    if (roll < knobs.hangRate) {
      hanging.add(reply);
      return reply; // never answered; the client times out
    }
    if (roll < knobs.hangRate + knobs.resetRate) {
      reply.raw.socket?.destroy();
      return reply;
    }
    if (roll < knobs.hangRate + knobs.resetRate + knobs.malformedRate) {
      return reply.code(200).header('content-type', 'application/json').send('{"code":1000,"data":{"id":');
    }
    if (route.kind === 'chat' && request.stream === true && knobs.streamMode !== 'off')
      return streamAnswer(task, reply);
    task.answered = true;
    return reply.send({ code: 1000, data: { ...identity(task), status: 'processing' } });
  }

  app.post(VENDOR_PATHS.submit.chat, (req, reply) => submit('chat', req.body, req.headers.authorization, reply));
  app.post(VENDOR_PATHS.submit.generations, (req, reply) =>
    submit('generations', req.body, req.headers.authorization, reply),
  );

  app.get<{ Params: { taskId: string } }>(VENDOR_PATHS.task(':taskId'), async (req, reply) => {
    await pause();
    if (!authorised(req.headers.authorization)) return reply.code(401).send({ code: 4010, message: 'invalid API key' });
    const task = tasks.get(Number(req.params.taskId));
    if (!task || task.fate === 'forgotten') return reply.code(404).send({ code: 4040, message: 'task not found' });
    if (chance() < knobs.pollErrorRate) return reply.code(503).send({ code: 5030, message: 'simulated poll outage' });
    if (chance() < knobs.pollMalformedRate) {
      return reply.header('content-type', 'application/json').send('{"code":1000,"data":');
    }
    if (knobs.pollStream) {
      return reply
        .header('content-type', 'text/event-stream')
        .send(`data: ${JSON.stringify({ code: 1000, data: view(task) })}\n\ndata: [DONE]\n\n`);
    }
    return reply.send({ code: 1000, data: view(task) });
  });

  /** The stream format is not shown by the vendor: this one is OpenAI-like, with the task named first. */
  async function streamAnswer(task: SimTask, reply: FastifyReply) {
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    if (knobs.streamLeadMs > 0) {
      raw.flushHeaders();
      await new Promise((r) => setTimeout(r, knobs.streamLeadMs));
    }
    const event = (data: unknown) => raw.write(`data: ${JSON.stringify(data)}\n\n`);
    const record = identity(task);
    if (knobs.streamMode !== 'cut_unnamed') {
      task.answered = true;
      event({ code: 1000, data: { ...record, status: 'processing' } });
    }
    for (const [i, word] of ['Simulated ', 'streamed ', 'answer.'].entries()) {
      await new Promise((r) => setTimeout(r, 5));
      event({ choices: [{ index: 0, delta: { content: word } }] });
      if (i === 0 && knobs.streamMode.startsWith('cut')) {
        await new Promise((r) => setTimeout(r, 5));
        raw.destroy(); // mid-stream: no terminating chunk
        return;
      }
    }
    task.readyAt = Date.now();
    const usage = knobs.streamMode === 'usage' ? (knobs.streamUsage ?? usageFor(task)) : undefined;
    force(task, { status: 'ready', usage });
    if (usage) event({ code: 1000, data: { ...record, status: 'ready', usage } });
    raw.end('data: [DONE]\n\n');
  }

  function view(task: SimTask): Record<string, unknown> {
    advance(task);
    const base = { ...identity(task), status: task.status };
    if (task.status === 'processing') return base;
    if (task.status === 'failed') return { ...base, error: { message: 'simulated generation failure' } };
    if (task.kind !== 'chat') {
      const n = typeof task.request.n === 'number' ? task.request.n : 1;
      const ext = task.kind === 'video' ? 'mp4' : 'png';
      return {
        ...base,
        output: { urls: Array.from({ length: n }, (_, i) => `https://sim.invalid/${task.id}/${i}.${ext}`) },
      };
    }
    const usage = task.forced && 'usage' in task.forced ? task.forced.usage : usageFor(task);
    return { ...base, output: `Simulated answer for ${task.id}.`, ...(usage === undefined ? {} : { usage }) };
  }

  function advance(task: SimTask): void {
    if (task.status !== 'processing' || task.fate === 'stalled') return;
    if (task.forced) task.status = task.forced.status;
    else if (Date.now() >= task.readyAt)
      task.status = prng(knobs.seed ^ task.taskId)() < knobs.failRate ? 'failed' : 'ready';
  }

  function usageFor(task: SimTask): Record<string, unknown> {
    const rand = prng((knobs.seed * 31 + task.taskId) >>> 0);
    const prompt = Math.max(1, Math.round(task.promptEstimate * (0.6 + 0.3 * rand())));
    const maxTokens = typeof task.request.max_tokens === 'number' ? task.request.max_tokens : 4096;
    const completion = Math.max(1, Math.min(maxTokens, Math.round(50 + rand() * 900)));
    const cached = Math.floor(prompt * 0.3 * rand());
    if (task.family === 'claude') {
      const write = Math.floor(prompt * 0.1 * rand());
      return {
        input_tokens: prompt - cached - write,
        output_tokens: completion,
        cache_read_input_tokens: cached,
        cache_creation_input_tokens: write,
      };
    }
    if (task.family === 'gemini') {
      const thoughts = Math.min(maxTokens - completion, Math.round(rand() * 200));
      return {
        promptTokenCount: prompt,
        candidatesTokenCount: completion,
        cachedContentTokenCount: cached,
        thoughtsTokenCount: Math.max(0, thoughts),
      };
    }
    return {
      prompt_tokens: prompt,
      completion_tokens: completion,
      prompt_tokens_details: { cached_tokens: cached },
      completion_tokens_details: { reasoning_tokens: Math.floor(completion * 0.2) },
    };
  }

  // ---- control plane (tests and benchmarks) -------------------------------------------------
  app.get('/__sim/tasks', async () => [...tasks.values()].map((t) => ({ ...t, status: (advance(t), t.status) })));
  app.post<{ Body: Partial<SimulatorKnobs> }>('/__sim/config', async (req) => {
    Object.assign(knobs, stripUndefined(req.body ?? {}));
    if (req.body?.seed !== undefined) chance = prng(knobs.seed);
    return knobs;
  });
  app.post<{ Params: { taskId: string }; Body: { status?: 'ready' | 'failed'; usage?: unknown } }>(
    '/__sim/tasks/:taskId/complete',
    async (req, reply) => {
      const task = tasks.get(Number(req.params.taskId));
      if (!task) return reply.code(404).send({ code: 4040, message: 'task not found' });
      force(task, {
        status: req.body?.status ?? 'ready',
        ...(req.body && 'usage' in req.body ? { usage: req.body.usage } : {}),
      });
      return view(task);
    },
  );
  for (const fate of ['stall', 'forget'] as const) {
    app.post<{ Params: { taskId: string } }>(`/__sim/tasks/:taskId/${fate}`, async (req, reply) => {
      const task = tasks.get(Number(req.params.taskId));
      if (!task) return reply.code(404).send({ code: 4040, message: 'task not found' });
      task.fate = fate === 'stall' ? 'stalled' : 'forgotten';
      journal?.write(`${JSON.stringify({ fate: { taskId: task.taskId, fate: task.fate } })}\n`);
      return { taskId: task.taskId, fate: task.fate };
    });
  }
  app.addHook('onClose', async () => {
    for (const reply of hanging) reply.raw.destroy();
    if (journal) await new Promise((resolve) => journal.end(resolve));
  });

  function force(task: SimTask, outcome: NonNullable<SimTask['forced']>): void {
    task.forced = outcome;
    journal?.write(`${JSON.stringify({ forced: { taskId: task.taskId, ...outcome } })}\n`);
  }

  return { app, knobs, tasks, received };
}

/**
 * How the vendor names a task in every answer. The spec: video routes return type video, image routes image, and chat
 * routes also image.
 */
function identity(task: SimTask) {
  return { id: task.id, taskId: task.taskId, type: task.kind === 'video' ? 'video' : 'image', model: task.model };
}

function stripUndefined<T extends object>(obj: T): Partial<T> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export type Simulator = ReturnType<typeof createSimulator>;
