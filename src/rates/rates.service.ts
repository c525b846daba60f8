/**
 * The credit price and FX rates (decisions §19): finance enters them, versioned by month; this
 * module owns credit_price and fx_rate. A rate never takes effect in a closed month (its statements
 * keep the converted totals they were read with) nor more than ten years ahead.
 */
import { Inject, Injectable } from '@nestjs/common';
import { ApiError } from '../common/api-error.js';
import { parseMonth } from '../common/month.js';
import { DATABASE, type Database } from '../database/database.js';
import { boundedAmount } from '../pricing/bounds.js';
import type { Decimal } from '../pricing/money.js';
import type { RateVersion } from './conversion.js';
import { rateRows, rateVersions, type RateRow } from './rate-versions.js';

const CURRENCY = /^[A-Z]{3}$/;
const MAX_LEAD_MONTHS = 120;

@Injectable()
export class RatesService {
  constructor(@Inject(DATABASE) private readonly db: Database) {}

  /** A reporting currency as given: three capital letters (ISO 4217), or a 400. */
  static currency(field: string, text: string): string {
    if (!CURRENCY.test(text)) throw ApiError.badRequest(`${field}: a currency is three capital letters (EUR, GBP, …)`);
    return text;
  }

  async setCreditPrice(month: string, usdPerCredit: string, note: string | undefined, by: string): Promise<number> {
    const rate = this.positive('usdPerCredit', usdPerCredit);
    return this.publish(null, month, rate, note, by);
  }

  async setFxRate(currency: string, month: string, perUsd: string, note: string | undefined, by: string) {
    const code = RatesService.currency('currency', currency);
    if (code === 'USD') throw ApiError.badRequest('currency: USD needs no rate (credits convert by the credit price)');
    return this.publish(code, month, this.positive('perUsd', perUsd), note, by);
  }

  /** Every credit-price version (currency null: `USD`) or every FX version of a currency, oldest first. */
  list(currency: string | null): Promise<RateRow[]> {
    return rateRows(this.db, currency);
  }

  /** The currencies finance has entered a rate for, alphabetically. */
  async currencies(): Promise<string[]> {
    const { rows } = await this.db.query<{ currency: string }>('SELECT DISTINCT currency FROM fx_rate ORDER BY 1');
    return rows.map((r) => r.currency);
  }

  /** The versions as conversion.ts takes them. */
  versions(currency: string | null): Promise<RateVersion[]> {
    return rateVersions(this.db, currency);
  }

  private positive(field: string, text: string) {
    const rate = boundedAmount(field, text, { negative: false });
    if (rate.isZero()) throw ApiError.badRequest(`${field}: must be above zero`);
    return rate;
  }

  /** A credit price (currency null) or an FX rate, checked against the closed months under the close's lock. */
  private async publish(
    currency: string | null,
    month: string,
    rate: Decimal,
    note: string | undefined,
    by: string,
  ): Promise<number> {
    const first = parseMonth('effectiveMonth', month).day;
    return this.db.transaction(async (client) => {
      // Taken in the mode a close takes: no close slips between this check and the insert.
      await client.query('LOCK TABLE month_close IN SHARE ROW EXCLUSIVE MODE');
      const { rows } = await client.query<{ closed: string | null; ahead: boolean }>(
        `SELECT (SELECT to_char(max(month), 'YYYY-MM') FROM month_close WHERE reopened_at IS NULL) AS closed,
                $1::date > (date_trunc('month', now(), 'UTC') AT TIME ZONE 'UTC' + make_interval(months => $2))::date AS ahead`,
        [first, MAX_LEAD_MONTHS],
      );
      const { closed, ahead } = rows[0]!;
      if (closed && month <= closed)
        throw ApiError.conflict(
          `effectiveMonth: ${month} is closed (through ${closed}); its statements keep the rates they were read with`,
        );
      if (ahead) throw ApiError.badRequest('effectiveMonth: must be within ten years from now');
      const values = [first, rate.toFixed(), note ?? null, by];
      const inserted =
        currency === null
          ? await client.query<{ version: number }>(
              `INSERT INTO credit_price (effective_month, usd_per_credit, note, published_by)
               VALUES ($1::date, $2::numeric, $3, $4) RETURNING version`,
              values,
            )
          : await client.query<{ version: number }>(
              `INSERT INTO fx_rate (effective_month, per_usd, note, published_by, currency)
               VALUES ($1::date, $2::numeric, $3, $4, $5) RETURNING version`,
              [...values, currency],
            );
      return inserted.rows[0]!.version;
    });
  }
}
