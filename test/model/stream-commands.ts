/**
 * Streamed chat (decisions §1): `stream: true` forwarded, the vendor's event stream relayed as it
 * arrives, and the task still settled: from the stream's usage when it reports one, else at its
 * estimate, flagged for review. A stream cut off half-way is never free: one that named the
 * vendor's task leaves it in flight, settled later from the vendor's record (a poll, a poll round);
 * one that did not is charged at its estimate, flagged for review. A client that leaves after the
 * first event does not stop the relay: it reads the vendor's stream to its end and settles from its
 * usage, after the client has gone (the tester waits for the task to settle, as an operator would).
 *
 * The simulator streams as its knobs say (streamMode, streamUsage), set for this one submission.
 * The relay settles before it ends the client's stream, so once the body has ended (or broken) the
 * books say what the model says.
 */
import { chatCharge, vendorUsage } from './chat-prices.js';
import { usageOf, usageTokens, type ChatFate, type ChatSubmit } from './chat-commands.js';
import type { Cmd, Env } from './commands.js';
import { submitOnce } from './clock.js';
import { eventually } from '../support/harness.js';
import { gql, simulatorKnobs, type Real } from './real.js';

/** How a stream ends: the vendor's end (usage or none; cut after or before naming the task), or the client leaving. */
export type StreamEnd = 'usage' | 'no_usage' | 'cut' | 'cut_unnamed' | 'left';
const SETTLED_WITHIN_MS = 10_000;

export class StreamedChat implements Cmd {
  constructor(
    /** what is asked, as a chat submission asks it, with `stream: true` */
    readonly chat: ChatSubmit,
    readonly end: StreamEnd,
    /** the usage a `usage` stream reports (and the one a client leaves) */
    readonly fate: Exclude<ChatFate, 'no-usage'>,
  ) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const { p, asked, body } = this.chat.admission(env, real);
    const model = this.chat.model;
    const usage = reportsUsage(this.end) ? usageOf(this.fate, model, this.chat.maxTokens, 3) : null;
    await simulatorKnobs(real, {
      streamMode: this.end === 'left' ? 'usage' : this.end,
      streamUsage: usage ? vendorUsage(model, usage) : null,
    });
    const {
      res: got,
      answer,
      minute,
    } = await submitOnce(env, real, p.id, asked, async () => {
      try {
        const got = await streamed(
          real,
          this.chat.at,
          p.key,
          asked.user,
          { ...body, stream: true },
          this.end === 'left',
        );
        // The vendor's stream runs on after the client left, reading the knobs at its end: they stay until it settles.
        if (this.end === 'left' && got.status === 200) await settled(real, namedTask(got.text, String(this)));
        return got;
      } finally {
        await simulatorKnobs(real, { streamMode: 'off', streamUsage: null });
      }
    });
    if (got.status !== answer)
      throw new Error(`${this}: expected ${answer}, got ${got.status} ${got.text.slice(0, 300)}`);
    if (answer !== 200) return;
    const cut = this.end === 'cut' || this.end === 'cut_unnamed';
    const broken = got.broken !== null && got.broken !== LEFT; // by the vendor's side, not the client leaving
    if (!got.contentType.startsWith('text/event-stream') || cut !== broken)
      throw new Error(
        `${this}: expected ${cut ? 'a stream cut off' : 'a whole stream'}, got ${got.contentType}, ${got.broken ?? 'whole'}: ${got.text.slice(0, 300)}`,
      );
    const ref = this.end === 'cut_unnamed' ? await newestTask(real, p.id) : namedTask(got.text, String(this));
    const task = this.chat.accepted(env, ref, asked, await minute(this.end === 'cut_unnamed' ? null : ref));
    if (this.end === 'cut') return; // in flight: the vendor's record settles it
    task.vendor = 'ready';
    task.chatCharge = usage ? chatCharge(model, usage, env.chat.get(ref)!.contract) : null;
    task.chatTokens = usage ? usageTokens(usage) : null;
    env.model.settle(task);
    if (this.end === 'cut_unnamed') task.vendor = 'none'; // never numbered to us: nothing to poll
  }
  toString = () =>
    `streamed-${this.chat}`.replace(/\)$/, `, ${this.end}${reportsUsage(this.end) ? ` ${this.fate}` : ''})`);
}

const reportsUsage = (end: StreamEnd) => end === 'usage' || end === 'left';
const LEFT = 'the client left after the first event';

interface Streamed {
  status: number;
  contentType: string;
  text: string;
  /** why the body ended before its end, or null */
  broken: string | null;
}

/** A streamed submission, its body read to its end, until it breaks, or (`leave`) until its first event. */
async function streamed(
  real: Real,
  at: number,
  key: string,
  user: string | null,
  body: unknown,
  leave: boolean,
): Promise<Streamed> {
  const leaving = new AbortController();
  const res = await fetch(`${real.url(at)}/api-platform/v1/chat/completions`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      ...(user ? { 'x-spendgate-user': user } : {}),
    },
    body: JSON.stringify(body),
    signal: AbortSignal.any([AbortSignal.timeout(60_000), leaving.signal]),
  });
  const decoder = new TextDecoder();
  let text = '';
  let broken: string | null = null;
  try {
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
      text += decoder.decode(chunk, { stream: true });
      if (leave && text.includes('\n\n')) leaving.abort(new Error(LEFT));
    }
  } catch (error) {
    broken = leaving.signal.aborted ? LEFT : (error as Error).message;
  }
  if (res.status >= 500) throw new Error(`streamed chat on gw${at}: ${res.status} ${text.slice(0, 300)}`);
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', text, broken };
}

/** The vendor's task the stream named in its first event (the simulator's is OpenAI-like, task first). */
function namedTask(text: string, what: string): string {
  const first = /^data: (.*)$/m.exec(text)?.[1];
  const taskId = first ? (JSON.parse(first) as { data?: { taskId?: number } }).data?.taskId : undefined;
  if (taskId === undefined) throw new Error(`${what}: the stream named no task: ${text.slice(0, 300)}`);
  return String(taskId);
}

/** A task no answer named: the newest of its project, as an operator finds it (tasks, newest first). */
async function newestTask(real: Real, projectId: string): Promise<string> {
  const res = await gql(
    real,
    `query($p: [ID!]) { tasks(filter: { projectIds: $p }, first: 1) { edges { node { taskId } } } }`,
    { p: [projectId] },
  );
  const edges = (res.data?.tasks as { edges: Array<{ node: { taskId: string } }> } | undefined)?.edges;
  if (!edges?.[0]) throw new Error(`a stream cut off unnamed: its task is not listed (${JSON.stringify(res)})`);
  return edges[0].node.taskId;
}

/** Until the task a client left is settled by the relay reading on, as the product shows it (its status). */
async function settled(real: Real, ref: string): Promise<void> {
  await eventually(async () => {
    const res = await gql(real, `query($t: ID!) { task(taskId: $t) { status } }`, { t: ref });
    return ['ready', 'failed'].includes((res.data?.task as { status?: string } | null)?.status ?? '');
  }, SETTLED_WITHIN_MS);
}
