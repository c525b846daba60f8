/**
 * Budgets set and deleted through GraphQL (decisions §4, §7, §20): of a project, a key, a tag, an
 * end user or each user, daily, weekly, monthly or lifetime, hard or soft, on the whole catalog or on part of it.
 */
import { Decimal } from 'decimal.js';
import { unitOfPart, type Part, type Scope, type Unit } from './catalog-model.js';
import { expectEqual, pickOf, type Cmd, type Env } from './commands.js';
import type { Period } from './money-model.js';
import { gql, type Real } from './real.js';

/** A budget set (created, or its limit and kind changed) or deleted. */
export class SetBudget implements Cmd {
  constructor(
    readonly project: number,
    readonly period: Period,
    readonly scope: Scope,
    readonly limit: Decimal,
    readonly hard: boolean,
    readonly unit: Unit = 'USD',
    readonly part: Part | null = null,
  ) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const p = real.sys.projects[this.project]!;
    const value =
      this.scope === 'USER'
        ? 'u1'
        : this.scope === 'TAG'
          ? p.name === 'beta'
            ? 'team=b'
            : 'team=a'
          : this.scope === 'API_KEY'
            ? p.key.split('_')[1]!
            : null;
    const variables = {
      u: this.unit,
      p: p.id,
      l: this.limit.toFixed(),
      per: this.period,
      h: this.hard,
      s: this.scope,
      v: value,
      ms: this.part?.scope ?? null,
      mv: this.part?.value ?? null,
    };
    if (this.part && unitOfPart(this.part) !== this.unit) return this.refused(real, variables);
    const existing = [...env.model.budgets.values()].find(
      (b) =>
        b.project === p.id &&
        b.unit === this.unit &&
        b.period === this.period &&
        b.scope === this.scope &&
        b.value === value &&
        b.part?.scope === this.part?.scope &&
        b.part?.value === this.part?.value,
    );
    if (existing) {
      const res = await gql(
        real,
        `mutation($b: ID!, $l: Decimal!, $h: Boolean!) { updateBudget(budgetId: $b, limit: $l, hard: $h) }`,
        { b: existing.id, l: this.limit.toFixed(), h: this.hard },
      );
      if (res.errors) throw new Error(`${this}: ${JSON.stringify(res.errors)}`);
      existing.limit = this.limit;
      existing.hard = this.hard;
      return;
    }
    const res = await gql(real, SET_BUDGET, variables);
    if (res.errors) throw new Error(`${this}: ${JSON.stringify(res.errors)}`);
    const id = (res.data as { setBudget: string }).setBudget;
    env.model.budgets.set(id, {
      id,
      project: p.id,
      unit: this.unit,
      period: this.period,
      hard: this.hard,
      scope: this.scope,
      value,
      part: this.part,
      limit: this.limit,
    });
  }

  /** A part of the catalog priced in the other unit: a 400 naming the unit, and no budget written (§20). */
  private async refused(real: Real, variables: { p: string }) {
    // Counted as the admin: the change may be a role's (AsRole), whose reads may be narrower.
    const count = async () => {
      const token = real.token;
      real.token = real.admin;
      try {
        const res = await gql(real, `query($p: ID!) { budgetStatus(projectId: $p) { budgetId } }`, { p: variables.p });
        return (res.data as { budgetStatus: unknown[] }).budgetStatus.length;
      } finally {
        real.token = token;
      }
    };
    const before = await count();
    const res = await gql(real, SET_BUDGET, variables);
    const error = res.errors?.[0] as { message: string; extensions?: { status?: number } } | undefined;
    if (error?.extensions?.status !== 400 || !/^unit: .* is priced in /.test(error.message))
      throw new Error(`${this}: expected a 400 naming the unit, got ${JSON.stringify(res.errors ?? res.data)}`);
    expectEqual(await count(), before, `${this}: budgets after the refusal`);
  }

  toString = () =>
    `budget(${['alpha', 'beta'][this.project]}, ${this.period} ${this.scope}${this.part ? ` ${this.part.scope} ${this.part.value}` : ''}, ${this.limit.toFixed()} ${this.unit}, ${this.hard ? 'hard' : 'soft'})`;
}

const SET_BUDGET = `mutation($p: ID!, $u: Unit!, $l: Decimal!, $per: Period!, $h: Boolean!, $s: BudgetScope!, $v: String, $ms: ModelScope, $mv: String) {
  setBudget(projectId: $p, unit: $u, limit: $l, period: $per, hard: $h, scope: $s, scopeValue: $v, modelScope: $ms, modelValue: $mv) }`;

export class DeleteBudget implements Cmd {
  constructor(readonly pick: number) {}
  check = (env: Readonly<Env>) => env.model.budgets.size > 0;
  async run(env: Env, real: Real) {
    const b = pickOf([...env.model.budgets.values()], this.pick);
    const res = await gql(real, `mutation($b: ID!) { deleteBudget(budgetId: $b) }`, { b: b.id });
    if (res.errors) throw new Error(`${this}: ${JSON.stringify(res.errors)}`);
    env.model.budgets.delete(b.id);
  }
  toString = () => `delete-budget(#${this.pick})`;
}
