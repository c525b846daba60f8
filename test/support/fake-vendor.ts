/**
 * A vendor that misbehaves on purpose, for the edges the simulator does not cover: it echoes the
 * Authorization header it received (as many vendors do in "invalid key" messages) and can answer
 * two submissions with the same taskId. Real HTTP on a free port.
 */
import Fastify from 'fastify';

export interface FakeVendor {
  url: string;
  /** Submissions the vendor accepted, by taskId. */
  accepted: Map<number, string>;
  /** The headers and body of every submission the vendor received. */
  received: Array<{ headers: Record<string, unknown>; body: unknown }>;
  close(): Promise<void>;
}

/** What a submission's `prompt` (or first message) asks the fake vendor to do. */
export type FakeBehaviour = 'ok' | 'echo-401' | 'echo-500' | 'dup' | 'echo-stream';

export const DUPLICATE_TASK_ID = 777_000_001;
export const POLL_ECHO_TASK_ID = 555_000_001;

export async function fakeVendor(): Promise<FakeVendor> {
  const app = Fastify();
  const accepted = new Map<number, string>();
  const received: FakeVendor['received'] = [];
  let next = 900_000_000;
  const behaviourOf = (body: Record<string, unknown>): string => {
    const messages = body.messages as Array<{ content: string }> | undefined;
    return String(body.prompt ?? messages?.[0]?.content ?? 'ok');
  };
  const submit = async (
    body: Record<string, unknown>,
    auth: string | undefined,
    reply: import('fastify').FastifyReply,
  ) => {
    const behaviour = behaviourOf(body);
    if (behaviour === 'echo-401') return reply.code(401).send({ code: 4010, message: `invalid API key: ${auth}` });
    if (behaviour === 'echo-500')
      return reply
        .code(500)
        .send({ code: 5000, message: `internal error while handling ${auth}`, headers: { authorization: auth } });
    const taskId = behaviour === 'dup' ? DUPLICATE_TASK_ID : ++next;
    accepted.set(taskId, behaviour);
    if (behaviour === 'echo-stream') {
      // The key arrives split over two writes, so the gateway must redact across chunk boundaries.
      reply.hijack();
      const raw = reply.raw;
      raw.writeHead(200, { 'content-type': 'text/event-stream' });
      const secret = String(auth);
      const half = Math.floor(secret.length / 2);
      raw.write(
        `data: ${JSON.stringify({ code: 1000, data: { id: `ch_${taskId}`, taskId, status: 'processing' } })}\n\n`,
      );
      raw.write(`data: {"debug":"${secret.slice(0, half)}`);
      await new Promise((r) => setTimeout(r, 20));
      raw.write(`${secret.slice(half)}"}\n\n`);
      raw.end(
        `data: ${JSON.stringify({ code: 1000, data: { id: `ch_${taskId}`, taskId, status: 'ready', usage: { prompt_tokens: 5, completion_tokens: 5 } } })}\n\ndata: [DONE]\n\n`,
      );
      return reply;
    }
    return reply.send({
      code: 1000,
      data: { id: `ch_${taskId}`, taskId, type: 'image', model: body.model, status: 'processing' },
    });
  };
  app.addHook('preHandler', async (req) => {
    if (req.method === 'POST') received.push({ headers: { ...req.headers }, body: req.body });
  });
  app.post('/api-platform/v1/chat/completions', (req, reply) =>
    submit(req.body as Record<string, unknown>, req.headers.authorization, reply),
  );
  app.post('/api-platform/v1/generations', (req, reply) =>
    submit(req.body as Record<string, unknown>, req.headers.authorization, reply),
  );
  app.get<{ Params: { id: string } }>('/api-platform/v1/tasks/:id', async (req, reply) => {
    const id = Number(req.params.id);
    if (id === POLL_ECHO_TASK_ID || accepted.get(id) === 'echo-poll') {
      return reply
        .code(503)
        .send({ code: 5030, message: `upstream overloaded; request was authorized with ${req.headers.authorization}` });
    }
    return reply.send({ code: 1000, data: { id: `ch_${id}`, taskId: id, status: 'processing' } });
  });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return { url, accepted, received, close: () => app.close() };
}
