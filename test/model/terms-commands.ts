/**
 * The terms money is priced and closed by (decisions §3, §19): a new publication of the price
 * book, a contract (its terms in contract-model.ts), a contract changed while a task runs, and a
 * commitment trued up when its month closes.
 */
import { Decimal } from 'decimal.js';
import { ChatOutcome, ChatSubmit, type ChatFate } from './chat-commands.js';
import { Poll, VendorOutcome, type Cmd, type Env, type Submit } from './commands.js';
import { describe, type Contract } from './contract-model.js';
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
 * Finance publishes a contract, effective now: some of contract-model.ts's terms (discounts and net
 * rates of kinds, families and models, in USD and credits), or none (the contract ends). Tasks
 * accepted before keep their version's terms (decisions §19).
 */
export class PublishContract implements Cmd {
  constructor(readonly terms: Contract) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const res = await gql(real, `mutation($t: [ContractTermInput!]!) { publishContract(terms: $t, note: "model") }`, {
      t: this.terms,
    });
    if (res.errors) throw new Error(`${this}: ${JSON.stringify(res.errors)}`);
    env.model.contract = this.terms;
  }
  toString = () => `contract(${describe(this.terms)})`;
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

/**
 * A contract published, a task accepted under it, another contract published while it runs, then
 * the vendor finishes it and the other instance polls it: held and charged by the terms in force at
 * its acceptance, whatever came after (§19). A chat's hold, its charge from the usage (or at its
 * estimate without one) and a media task's price each meet a contract here, which single random
 * steps rarely line up.
 */
export class ContractedWhileRunning implements Cmd {
  constructor(
    readonly first: Contract,
    readonly then: Contract,
    readonly task: ChatSubmit | Submit,
    /** a chat task's usage (a media task turns ready) */
    readonly fate: ChatFate,
  ) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const m = env.model;
    await new PublishContract(this.first).run(env, real);
    const before = m.tasks.length;
    await this.task.run(env, real);
    if (m.tasks.length === before) return; // refused by a budget or a limit: nothing runs
    const task = m.tasks.at(-1)!;
    await new PublishContract(this.then).run(env, real);
    const open = m.tasks.filter((t) => t.vendor === 'processing' && /^\d+$/.test(t.ref));
    if (this.task instanceof ChatSubmit)
      await new ChatOutcome(open.filter((t) => t.unit === 'CREDITS').indexOf(task), this.fate, 3).run(env, real);
    else await new VendorOutcome(open.filter((t) => t.unit === 'USD').indexOf(task), 'ready').run(env, real);
    const numbered = m.tasks.filter((t) => /^\d+$/.test(t.ref));
    await new Poll(1 - this.task.at, numbered.indexOf(task)).run(env, real);
  }
  toString = () =>
    `contracted-while-running(${describe(this.first)}; ${this.task}${this.task instanceof ChatSubmit ? ` ${this.fate}` : ''}; then ${describe(this.then)})`;
}
