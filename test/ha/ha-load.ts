/**
 * The steady load of the failover test (decisions §17): on each gateway, clients submitting one
 * request after another, each request with its own Idempotency-Key and retried with it after a
 * 503 (or a lost connection) until it is answered 200 or refused by its budget; a slower client on
 * a project whose hard budget is nearly spent; and a client polling answered tasks. Every attempt
 * is kept with what its answer named (a gatewayTaskId, a submissionRef), so the test can match
 * every task in the ledger to an answer.
 */
import type { GatewayAnswer } from '../support/answers.js';

export interface Attempt {
  /** ms since the load's clock started, when the request was sent. */
  at: number;
  ms: number;
  status: number;
}

export interface Submission {
  key: string;
  project: 'steady' | 'tight';
  attempts: Attempt[];
  /** The vendor's taskId of the 200 answer. */
  taskId?: number;
  refusedByBudget?: boolean;
  /** What refusals named: gw-<id> and submission references. */
  gatewayTaskIds: string[];
  refs: string[];
  /** Other statuses than 200, 402, 409 and 5xx (none expected). */
  unexpected: string[];
}

export interface Client {
  url: string;
  key: string;
}

const IMAGE = JSON.stringify({ model: 'seedream-4.0', prompt: 'a red fox during a failover' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class Load {
  readonly submissions: Submission[] = [];
  readonly polls: Attempt[] = [];
  private readonly t0 = performance.now();
  private running = true;
  /**
   * When stop() was called: a failure in the last second before it is not judged (a retry 100 ms
   * later would have shown whether it was the last one, but the round was over).
   */
  private stoppedAt = Infinity;
  private readonly loops: Array<Promise<void>> = [];
  private seq = 0;

  constructor(
    private readonly name: string,
    private readonly steady: Client[],
    private readonly tight: Client[],
  ) {}

  /** ms on the load's clock. */
  now(): number {
    return performance.now() - this.t0;
  }

  start({ steadyPerGateway = 2, tightEveryMs = 250 } = {}): void {
    for (const client of this.steady)
      for (let i = 0; i < steadyPerGateway; i++) this.loops.push(this.submitLoop(client, 'steady', 0));
    for (const client of this.tight) this.loops.push(this.submitLoop(client, 'tight', tightEveryMs));
    for (const client of this.steady) this.loops.push(this.pollLoop(client));
  }

  async stop(): Promise<void> {
    this.running = false;
    this.stoppedAt = this.now();
    await Promise.all(this.loops);
  }

  private async submitLoop(client: Client, project: Submission['project'], everyMs: number): Promise<void> {
    while (this.running) {
      const s: Submission = {
        key: `${this.name}-${project}-${++this.seq}`,
        project,
        attempts: [],
        gatewayTaskIds: [],
        refs: [],
        unexpected: [],
      };
      this.submissions.push(s);
      await this.submitUntilAnswered(client, s);
      if (everyMs) await sleep(everyMs);
    }
  }

  /** One request, retried with its key while the answer is a 503, a conflict "in progress" or no answer. */
  private async submitUntilAnswered(client: Client, s: Submission): Promise<void> {
    for (;;) {
      const at = this.now();
      let status = 0;
      let body: GatewayAnswer | undefined;
      try {
        const res = await fetch(`${client.url}/api-platform/v1/generations`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${client.key}`,
            'content-type': 'application/json',
            'idempotency-key': s.key,
          },
          body: IMAGE,
          signal: AbortSignal.timeout(60_000),
        });
        status = res.status;
        body = (await res.json()) as GatewayAnswer;
      } catch {
        // no answer: retried like a 503
      }
      s.attempts.push({ at, ms: this.now() - at, status });
      if (status === 200) {
        s.taskId = body!.data.taskId;
        return;
      }
      if (status === 402) {
        s.refusedByBudget = true;
        return;
      }
      const details = body?.details;
      if (details?.gatewayTaskId) s.gatewayTaskIds.push(details.gatewayTaskId);
      if (typeof details?.submissionRef === 'string') s.refs.push(details.submissionRef);
      if (status !== 0 && status !== 409 && status < 500) s.unexpected.push(`${status} ${body?.message}`);
      // A 504 names a task whose outcome is unknown: the key answers the same from now on.
      if (status === 504 || (status !== 0 && status !== 409 && status < 500)) return;
      if (!this.running && s.attempts.length > 1) return;
      await sleep(100);
    }
  }

  private async pollLoop(client: Client): Promise<void> {
    let i = 0;
    while (this.running) {
      const answered = this.submissions.filter((s) => s.taskId !== undefined && s.project === 'steady');
      const s = answered[answered.length - 1 - (i++ % Math.max(1, Math.min(answered.length, 50)))];
      if (s) {
        const at = this.now();
        const status = await fetch(`${client.url}/api-platform/v1/tasks/${s.taskId}`, {
          headers: { authorization: `Bearer ${client.key}` },
          signal: AbortSignal.timeout(60_000),
        }).then(
          async (r) => (await r.arrayBuffer(), r.status),
          () => 0,
        );
        this.polls.push({ at, ms: this.now() - at, status });
      }
      await sleep(50);
    }
  }

  /**
   * What the round did to submissions around `eventAt` (ms on the load's clock): when the first
   * submission succeeded after the last one that failed (ms after the event; 0 if none failed),
   * the longest stretch without a success, the p99 of submission latency from the event to a
   * second after both, and how many attempts were answered 503.
   */
  figures(eventAt: number) {
    const attempts = this.submissions.flatMap((s) => s.attempts).sort((a, b) => a.at - b.at);
    const failed = (a: Attempt) => a.status === 0 || a.status >= 500;
    const judged = (a: Attempt) => a.at + a.ms <= this.stoppedAt - 1_000;
    const lastFailure = attempts.filter((a) => a.at >= eventAt - 1_000 && failed(a) && judged(a)).at(-1);
    const successes = attempts.filter((a) => a.status === 200).map((a) => a.at + a.ms);
    const recoveredAt = lastFailure
      ? Math.min(...successes.filter((done) => done > lastFailure.at + lastFailure.ms))
      : eventAt;
    let longestGap = 0;
    let gapEnd = eventAt;
    const around = successes.filter((done) => done >= eventAt - 1_000).sort((a, b) => a - b);
    for (let i = 1; i < around.length; i++)
      if (around[i]! - around[i - 1]! > longestGap) [longestGap, gapEnd] = [around[i]! - around[i - 1]!, around[i]!];
    // The failover window: from the event to a second after submissions flow again.
    const windowEnd = Math.max(recoveredAt, gapEnd) + 1_000;
    const window = attempts
      .filter((a) => a.at >= eventAt && a.at <= windowEnd)
      .map((a) => a.ms)
      .sort((a, b) => a - b);
    return {
      recoveredMs: Math.round(recoveredAt - eventAt),
      longestGapMs: Math.round(longestGap),
      p99Ms: Math.round(window[Math.min(window.length - 1, Math.floor(window.length * 0.99))] ?? 0),
      answered503: attempts.filter((a) => a.at >= eventAt - 1_000 && a.status === 503).length,
      attempts: attempts.length,
      polls: this.polls.length,
      pollsFailed: this.polls.filter((a) => a.status !== 200).length,
    };
  }
}
