/**
 * The credit price's and FX rates' versions as stored (decisions §19): what RatesService lists and
 * what readers below the conversions (the FOCUS export) price credits with. Plain queries.
 */
import type { Database } from '../database/database.js';
import { dec } from '../pricing/money.js';
import type { RateVersion } from './conversion.js';

export interface RateRow {
  version: number;
  currency: string;
  month: string;
  rate: string;
  note: string | null;
  publishedAt: Date;
  publishedBy: string;
}

/** Every credit-price version (currency null: `USD`) or every FX version of a currency, oldest first. */
export async function rateRows(db: Pick<Database, 'query'>, currency: string | null): Promise<RateRow[]> {
  const { rows } =
    currency === null
      ? await db.query<RateRow>(
          `SELECT version, 'USD' AS currency, to_char(effective_month, 'YYYY-MM') AS month, usd_per_credit::text AS rate,
                  note, published_at AS "publishedAt", published_by AS "publishedBy" FROM credit_price ORDER BY version`,
        )
      : await db.query<RateRow>(
          `SELECT version, currency, to_char(effective_month, 'YYYY-MM') AS month, per_usd::text AS rate, note,
                  published_at AS "publishedAt", published_by AS "publishedBy" FROM fx_rate WHERE currency = $1 ORDER BY version`,
          [currency],
        );
  return rows.map((r) => ({ ...r, rate: dec(r.rate).toFixed() }));
}

/** The versions as conversion.ts takes them. */
export async function rateVersions(db: Pick<Database, 'query'>, currency: string | null): Promise<RateVersion[]> {
  return (await rateRows(db, currency)).map((r) => ({ version: r.version, month: r.month, rate: dec(r.rate) }));
}
