/**
 * Chat through the tester (decisions §3, §4, §6): a submission held at its estimate in credits,
 * then the vendor's answer with the usage it reports (under the hold, past it, past GPT-5.6's
 * long-context line, or none at all), settled by a poll like any other task.
 */
import { estimateInputTokens } from '../../src/pricing/token-estimate.js';
import { chatCharge, chatHold, chatMessages, vendorUsage, type ChatModel, type ChatUsage } from './chat-prices.js';
import { expectEqual, pickOf, USERS, type Cmd, type Env } from './commands.js';
import { submitOnce } from './clock.js';
import { call, expectStatus, type Real } from './real.js';

/** Chat tasks the vendor is still working on (a ChatOutcome picks among them). */
export const chatTasks = (env: Readonly<Env>) =>
  env.model.tasks.filter((t) => t.unit === 'CREDITS' && t.vendor === 'processing' && /^\d+$/.test(t.ref));

/** A chat submission: admitted exactly when the model admits its hold (the estimate, §4) and the limits (§20). */
export class ChatSubmit implements Cmd {
  constructor(
    readonly at: number,
    readonly project: number,
    readonly model: ChatModel,
    readonly words: number,
    readonly maxTokens: number,
    readonly user: number,
  ) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const { p, asked, body } = this.admission(env, real);
    const { res, answer, minute } = await submitOnce(env, real, p.id, asked, () =>
      call(real, this.at, 'POST', '/api-platform/v1/chat/completions', {
        key: p.key,
        body,
        headers: asked.user ? { 'x-spendgate-user': asked.user } : {},
      }),
    );
    expectStatus(res, answer, String(this));
    if (answer !== 200) return;
    const ref = String((res.body as { data: { taskId: number } }).data.taskId);
    this.accepted(env, ref, asked, await minute(ref));
  }
  /** Its project, its request, and the hold the model places for it (the estimate, §4). */
  admission(env: Env, real: Real) {
    const p = real.sys.projects[this.project]!;
    const hold = chatHold(this.model, this.words, this.maxTokens, env.model.contract);
    const user = USERS[this.user]!;
    const tags = p.name === 'beta' ? ['team=b'] : [];
    // What a tokens-per-minute limit counts at admission (§20): the prompt's estimate + max_tokens.
    const tokens = estimateInputTokens(chatMessages(this.words)) + this.maxTokens;
    const asked = { project: p.id, model: this.model, unit: 'CREDITS' as const, user, tags, hold, tokens };
    const body = { model: this.model, messages: chatMessages(this.words), max_tokens: this.maxTokens };
    return { p, asked, body };
  }
  /** The model's task of an admitted submission, and what it asked for (a later usage is made from it). */
  accepted(env: Env, ref: string, asked: ReturnType<ChatSubmit['admission']>['asked'], minute: number) {
    const { model, words, maxTokens } = this;
    env.chat.set(ref, { model, words, maxTokens, contract: env.model.contract });
    return env.model.accept({ ref, ...asked, viaKey: true, minute });
  }
  toString = () =>
    `chat(gw${this.at}, ${['alpha', 'beta'][this.project]}, ${this.model}, ${this.words} words, max ${this.maxTokens}, user ${USERS[this.user]})`;
}

export type ChatFate = 'within' | 'overrun' | 'long-context' | 'no-usage';

/** The vendor finishes a chat task with the usage of its fate. */
export class ChatOutcome implements Cmd {
  constructor(
    readonly pick: number,
    readonly fate: ChatFate,
    readonly cached: number,
  ) {}
  check = (env: Readonly<Env>) => chatTasks(env).length > 0;
  async run(env: Env, real: Real) {
    const t = pickOf(chatTasks(env), this.pick);
    const asked = env.chat.get(t.ref)!;
    const usage = usageOf(this.fate, asked.model, asked.maxTokens, this.cached);
    const res = await fetch(`${real.sys.simUrl}/__sim/tasks/${t.ref}/complete`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'ready', usage: usage ? vendorUsage(asked.model, usage) : null }),
    });
    expectEqual(res.status, 200, `${this}: the simulator took the outcome`);
    t.vendor = 'ready';
    t.chatCharge = usage ? chatCharge(asked.model, usage, asked.contract) : null;
    t.chatTokens = usage ? usageTokens(usage) : null;
  }
  toString = () => `chat-vendor(#${this.pick}, ${this.fate}, ${this.cached} cached)`;
}

/** The tokens a usage counts, every line's (what a tokens-per-minute limit counts once settled, §20). */
export const usageTokens = (u: ChatUsage) => u.input + u.output + u.cacheRead + u.cacheWrite;

/** Tokens the vendor reports: within max_tokens, past it (an overrun), or a prompt past 272K tokens. */
export function usageOf(fate: ChatFate, model: ChatModel, maxTokens: number, cached: number): ChatUsage | null {
  if (fate === 'no-usage') return null;
  const output = fate === 'overrun' ? maxTokens * 3 + 7 : Math.max(1, Math.floor(maxTokens / 2));
  const prompt = fate === 'long-context' ? 272_001 + cached : 20 + cached;
  const cacheWrite = cached % (model === 'claude-sonnet-5' ? 5 : 7);
  return { input: prompt - cached - cacheWrite, output, cacheRead: cached, cacheWrite };
}
