/**
 * Finance's rates as operations (decisions §19): the credit price (USD a credit) or an FX rate (EUR or
 * JPY per USD), from this month or last; refused with a 409 once that month is closed. The version the
 * product answers is what a converted figure must name (invariants.ts).
 */
import type { Cmd, Env } from './commands.js';
import type { RateSeries } from './rates-model.js';
import { gql, type Real } from './real.js';

const mutation = (series: RateSeries) =>
  series === 'CREDIT'
    ? `mutation($m: String!, $r: String!) { set: setCreditPrice(effectiveMonth: $m, usdPerCredit: $r) }`
    : `mutation($m: String!, $r: String!) { set: setFxRate(currency: "${series}", effectiveMonth: $m, perUsd: $r) }`;

export class SetRate implements Cmd {
  constructor(
    readonly series: RateSeries,
    readonly lastMonth: boolean,
    readonly rate: string,
  ) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const m = env.model;
    const month = this.lastMonth ? m.previous : m.current;
    const res = await gql(real, mutation(this.series), { m: month, r: this.rate });
    if (m.closed.has(month)) {
      if (res.errors?.[0]?.extensions?.status !== 409)
        throw new Error(`${this}: a closed month must be refused: ${JSON.stringify(res)}`);
      return;
    }
    if (res.errors) throw new Error(`${this}: ${JSON.stringify(res.errors)}`);
    m.rates.publish(this.series, month, (res.data as { set: number }).set, this.rate);
  }
  toString = () =>
    `${this.series === 'CREDIT' ? 'credit-price' : `${this.series.toLowerCase()}-rate`}(${this.lastMonth ? 'last month' : 'this month'} ${this.rate})`;
}
