/**
 * Limits on tasks in flight, requests a minute and chat tokens a minute (decisions §20) as
 * operations: set one (or change its amount), delete one, a minute's turn under one. The
 * submissions that meet them are commands.ts's and chat-commands.ts's, answered by the model's
 * `answer` (402 before 429).
 */
import type { Submission } from './catalog-model.js';
import { ChatOutcome, chatTasks, type ChatFate, type ChatSubmit } from './chat-commands.js';
import { Burst, pickOf, Poll, type Cmd, type Env } from './commands.js';
import { minuteNow } from './clock.js';
import type { LimitKind, LimitScope } from './limits-model.js';
import { gql, type Real } from './real.js';

const PROJECTS = ['alpha', 'beta'];
const UNIT: Record<LimitKind, string> = {
  TASKS_IN_FLIGHT: 'in flight',
  REQUESTS_PER_MINUTE: 'requests a minute',
  TOKENS_PER_MINUTE: 'tokens a minute',
};

export class SetLimit implements Cmd {
  constructor(
    readonly project: number,
    readonly kind: LimitKind,
    readonly scope: LimitScope,
    readonly amount: number,
  ) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const p = real.sys.projects[this.project]!;
    const value = this.scope === 'USER' ? 'u1' : null;
    const res = await gql(
      real,
      `mutation($p: ID!, $k: LimitKind!, $a: Int!, $s: BudgetScope!, $v: String) {
        setLimit(projectId: $p, kind: $k, amount: $a, scope: $s, scopeValue: $v) }`,
      { p: p.id, k: this.kind, a: this.amount, s: this.scope, v: value },
    );
    if (res.errors) throw new Error(`${this}: ${JSON.stringify(res.errors)}`);
    const id = (res.data as { setLimit: string }).setLimit;
    // One limit per project, kind and scope: set again, the same limit with its new amount, still
    // counting what it counted.
    const existing = env.model.limits.limits.get(id);
    if (existing) existing.amount = this.amount;
    else
      env.model.limits.limits.set(id, {
        id,
        project: p.id,
        kind: this.kind,
        scope: this.scope,
        value,
        amount: this.amount,
      });
  }
  toString = () => `limit(${PROJECTS[this.project]}, ${this.amount} ${UNIT[this.kind]}, ${this.scope})`;
}

export class DeleteLimit implements Cmd {
  constructor(readonly pick: number) {}
  check = (env: Readonly<Env>) => env.model.limits.limits.size > 0;
  async run(env: Env, real: Real) {
    const l = pickOf([...env.model.limits.limits.values()], this.pick);
    const res = await gql(real, `mutation($l: ID!) { deleteLimit(limitId: $l) }`, { l: l.id });
    if (res.errors) throw new Error(`${this}: ${JSON.stringify(res.errors)}`);
    env.model.limits.delete(l.id);
  }
  toString = () => `delete-limit(#${this.pick})`;
}

/**
 * A minute's turn under a limit of requests a minute (§20): the project's limit set (or its amount
 * changed), a burst past it over both instances, time passing to the next UTC minute when that is
 * at most `within` seconds away, and the same burst again: the new minute's count begins anew. The
 * model answers each burst (budgets first); without the wait, the second meets the full minute.
 */
export class MinuteTurn implements Cmd {
  constructor(
    readonly project: number,
    readonly amount: number,
    readonly body: Submission,
    readonly within = 30,
  ) {}
  check = () => true;
  async run(env: Env, real: Real) {
    await new SetLimit(this.project, 'REQUESTS_PER_MINUTE', 'PROJECT', this.amount).run(env, real);
    const burst = new Burst(this.project, this.body, this.amount + 1);
    await burst.run(env, real);
    const left = 60_000 - (Date.now() % 60_000);
    if (left <= this.within * 1000) await new Promise((r) => setTimeout(r, left + 100));
    await burst.run(env, real);
  }
  toString = () =>
    `minute-turn(${PROJECTS[this.project]}, ${this.amount} a minute, ${JSON.stringify(this.body)} × ${this.amount + 1}, twice)`;
}

/**
 * A chat under a limit of chat tokens a minute (§20): the project's limit set (or changed), a chat
 * counted at its estimate, the vendor's usage (`fate`) and a poll that settles it, then a second
 * chat, admitted or refused by the count as its settlement corrected it. The model answers each
 * step; the invariants read the count after it.
 */
export class TokensCorrected implements Cmd {
  constructor(
    readonly amount: number,
    readonly chat: ChatSubmit,
    readonly fate: ChatFate,
  ) {}
  check = () => true;
  async run(env: Env, real: Real) {
    await new SetLimit(this.chat.project, 'TOKENS_PER_MINUTE', 'PROJECT', this.amount).run(env, real);
    const before = env.model.tasks.length;
    await this.chat.run(env, real);
    const t = env.model.tasks[before];
    if (t) {
      await new ChatOutcome(chatTasks(env).indexOf(t), this.fate, 2).run(env, real);
      await new Poll(this.chat.at, env.model.tasks.filter((x) => /^\d+$/.test(x.ref)).indexOf(t)).run(env, real);
    }
    await this.chat.run(env, real);
  }
  toString = () => `tokens-corrected(${this.amount} tokens a minute, ${this.chat} twice, the first ${this.fate})`;
}

/** Each limit's use now, subject by subject, as the product lists it and as the model counts it. */
export async function limitProblems(env: Env, real: Real): Promise<string[]> {
  const problems: string[] = [];
  for (const p of real.sys.projects) {
    const minute = minuteNow();
    const res = await gql(real, `query($p: ID!) { limits(projectId: $p) { id use(first: 50) { subject used } } }`, {
      p: p.id,
    });
    // A minute that turned during the read: its per-minute counts may be either minute's.
    const turned = minuteNow() !== minute;
    const listed = (res.data?.limits ?? []) as Array<{ id: string; use: Array<{ subject: string; used: number }> }>;
    const mine = [...env.model.limits.limits.values()].filter((l) => l.project === p.id);
    if (JSON.stringify(listed.map((l) => l.id).sort()) !== JSON.stringify(mine.map((l) => l.id).sort()))
      problems.push(
        `limits of ${p.name}: the product lists ${listed.map((l) => l.id)}, the model ${mine.map((l) => l.id)}`,
      );
    for (const l of mine) {
      if (turned && l.kind !== 'TASKS_IN_FLIGHT') continue;
      const shown = Object.fromEntries(
        (listed.find((x) => x.id === l.id)?.use ?? []).filter((u) => u.used !== 0).map((u) => [u.subject, u.used]),
      );
      const counted = Object.fromEntries(env.model.limits.use(l, env.model.tasks, minute));
      const sorted = (o: Record<string, number>) => JSON.stringify(Object.entries(o).sort());
      if (sorted(shown) !== sorted(counted))
        problems.push(
          `limit ${l.scope} of ${p.name} (${l.amount} ${UNIT[l.kind]}): the product counts ${JSON.stringify(shown)}, the model ${JSON.stringify(counted)}`,
        );
    }
  }
  return problems;
}
