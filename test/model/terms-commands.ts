/**
 * The terms money is priced and closed by (decisions §3, §19): a new publication of the price
 * book, a contract's discount, and a commitment trued up when its month closes.
 */
import { Decimal } from 'decimal.js';
import type { Cmd, Env } from './commands.js';
import { gql, type Real } from './real.js';

/** An owner publishes seedream-4.0's rates anew, effective now: tasks accepted before keep theirs (§3). */
export class PublishPrices implements Cmd {
  constructor(readonly rates: [string, string, string]) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const [r1, r2, r4] = this.rates;
    const rates = [
      ['1K', r1],
      ['2K', r2],
      ['4K', r4],
    ].map(([key, rate]) => ({ model: 'seedream-4.0', component: 'image', key, rate, unit: 'USD' }));
    const res = await gql(real, `mutation($r: [PriceRateInput!]!) { publishPrices(rates: $r, note: "model") }`, {
      r: rates,
    });
    if (res.errors) throw new Error(`${this}: ${JSON.stringify(res.errors)}`);
    env.model.seedream = { '1K': r1, '2K': r2, '4K': r4 };
  }
  toString = () => `publish-seedream(${this.rates.join('/')})`;
}

/**
 * Finance publishes a contract, effective now: a discount off every image line (kind image), or none
 * (the contract ends). Tasks accepted before keep their version's terms (decisions §19).
 */
export class PublishContract implements Cmd {
  constructor(readonly discountPercent: string | null) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const terms =
      this.discountPercent === null
        ? []
        : [{ scope: 'kind', value: 'image', unit: 'USD', discountPercent: this.discountPercent }];
    const res = await gql(real, `mutation($t: [ContractTermInput!]!) { publishContract(terms: $t, note: "model") }`, {
      t: terms,
    });
    if (res.errors) throw new Error(`${this}: ${JSON.stringify(res.errors)}`);
    env.model.imageDiscount = this.discountPercent ?? '0';
  }
  toString = () => `contract(images ${this.discountPercent ?? 'none'}%)`;
}

/** Finance commits to a USD spend for last month, carried by alpha; its close trues up the shortfall. */
export class Commit implements Cmd {
  constructor(readonly amount: string) {}
  check = (env: Readonly<Env>) => env.model.commitment === null && !env.model.closed.has(env.model.previous);
  async run(env: Env, real: Real) {
    const m = env.model;
    const project = real.sys.projects[0]!.id;
    const res = await gql(
      real,
      `mutation($p: ID!, $m: String!, $a: String!) { createCommitment(name: "model", projectId: $p, unit: USD, amount: $a, startsMonth: $m, endsMonth: $m) { id } }`,
      { p: project, m: m.previous, a: this.amount },
    );
    if (res.errors) throw new Error(`${this}: ${JSON.stringify(res.errors)}`);
    m.commitment = { project, amount: new Decimal(this.amount), month: m.previous, trued: new Decimal(0) };
  }
  toString = () => `commit(${this.amount} USD last month)`;
}
