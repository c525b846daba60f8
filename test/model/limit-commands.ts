/**
 * Limits on tasks in flight (decisions §20) as operations: set one (or change its amount), delete
 * one. The submissions that meet them are commands.ts's and chat-commands.ts's, answered by the
 * model's `answer` (402 before 429).
 */
import { pickOf, type Cmd, type Env } from './commands.js';
import type { LimitScope } from './limits-model.js';
import { gql, type Real } from './real.js';

const PROJECTS = ['alpha', 'beta'];

export class SetLimit implements Cmd {
  constructor(
    readonly project: number,
    readonly scope: LimitScope,
    readonly amount: number,
  ) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const p = real.sys.projects[this.project]!;
    const value = this.scope === 'USER' ? 'u1' : null;
    const res = await gql(
      real,
      `mutation($p: ID!, $a: Int!, $s: BudgetScope!, $v: String) {
        setLimit(projectId: $p, kind: TASKS_IN_FLIGHT, amount: $a, scope: $s, scopeValue: $v) }`,
      { p: p.id, a: this.amount, s: this.scope, v: value },
    );
    if (res.errors) throw new Error(`${this}: ${JSON.stringify(res.errors)}`);
    const id = (res.data as { setLimit: string }).setLimit;
    // One limit per project, kind and scope: set again, the same limit with its new amount, still
    // counting the tasks it counted.
    const existing = env.model.limits.limits.get(id);
    if (existing) existing.amount = this.amount;
    else env.model.limits.limits.set(id, { id, project: p.id, scope: this.scope, value, amount: this.amount });
  }
  toString = () => `limit(${PROJECTS[this.project]}, ${this.amount} in flight, ${this.scope})`;
}

export class DeleteLimit implements Cmd {
  constructor(readonly pick: number) {}
  check = (env: Readonly<Env>) => env.model.limits.limits.size > 0;
  async run(env: Env, real: Real) {
    const l = pickOf([...env.model.limits.limits.values()], this.pick);
    const res = await gql(real, `mutation($l: ID!) { deleteLimit(limitId: $l) }`, { l: l.id });
    if (res.errors) throw new Error(`${this}: ${JSON.stringify(res.errors)}`);
    env.model.limits.limits.delete(l.id);
  }
  toString = () => `delete-limit(#${this.pick})`;
}

/** Each limit's use now, subject by subject, as the product lists it and as the model counts it. */
export async function limitProblems(env: Env, real: Real): Promise<string[]> {
  const problems: string[] = [];
  for (const p of real.sys.projects) {
    const res = await gql(real, `query($p: ID!) { limits(projectId: $p) { id use(first: 50) { subject used } } }`, {
      p: p.id,
    });
    const listed = (res.data?.limits ?? []) as Array<{ id: string; use: Array<{ subject: string; used: number }> }>;
    const mine = [...env.model.limits.limits.values()].filter((l) => l.project === p.id);
    if (JSON.stringify(listed.map((l) => l.id).sort()) !== JSON.stringify(mine.map((l) => l.id).sort()))
      problems.push(
        `limits of ${p.name}: the product lists ${listed.map((l) => l.id)}, the model ${mine.map((l) => l.id)}`,
      );
    for (const l of mine) {
      const shown = Object.fromEntries(
        (listed.find((x) => x.id === l.id)?.use ?? []).filter((u) => u.used !== 0).map((u) => [u.subject, u.used]),
      );
      const counted = Object.fromEntries(env.model.limits.use(l, env.model.tasks));
      const sorted = (o: Record<string, number>) => JSON.stringify(Object.entries(o).sort());
      if (sorted(shown) !== sorted(counted))
        problems.push(
          `limit ${l.scope} of ${p.name} (${l.amount} in flight): the product counts ${JSON.stringify(shown)}, the model ${JSON.stringify(counted)}`,
        );
    }
  }
  return problems;
}
