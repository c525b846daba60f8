/**
 * The price book in PostgreSQL: versions with effective times. Version 1 is seeded from the
 * spec's tables. Every instance keeps the versions in memory and re-reads them when a newer one
 * appears (checked every few seconds), so an instance prices with the version in force.
 */
import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { Database, DATABASE } from '../database/database.js';
import { ApiError } from '../common/api-error.js';
import { CacheEvents } from '../common/cache-events.js';
import { findRoute } from '../catalog/catalog.js';
import {
  buildPriceBook,
  SPEC_PRICE_BOOK_EFFECTIVE_AT,
  SPEC_PRICE_ROWS,
  type PriceBook,
  type PriceRow,
} from './price-book.js';
import { unitOf } from './engine.js';
import { dec } from './money.js';
import { boundedAmount } from './bounds.js';
import { TOKEN_CLASSES, type Unit } from './pricing.types.js';
import { contractedRateOf, type ContractTerm } from './contract.js';
import { loadContractTerms, termView, writeContractTerms } from './contract-rows.js';

const REFRESH_MS = 5_000;
/** A version may be published to start at most this far ahead. */
const MAX_LEAD_MS = 10 * 365 * 86_400_000;
/** The components each kind of route is priced by (price-book.ts). */
const COMPONENTS_OF = { chat: ['token'], video: ['second', 'request'], image: ['image'] } as const;

/**
 * Refuses a version that would rewrite history (effective before now: tasks already accepted
 * were priced by the version then in force) or price something that does not exist. Each problem
 * names the row. `effectiveAt` omitted means "now": the moment the version is written, under the
 * price book's lock (publish).
 */
export function checkPublishable(effectiveAt: Date | undefined, rows: readonly PriceRow[], now = new Date()): void {
  checkEffectiveAt(effectiveAt, now);
  if (rows.length === 0) throw ApiError.badRequest('rates: give at least one rate');
  checkRows(rows);
}

/** A version (rates or a contract) starts now or later, within ten years. */
export function checkEffectiveAt(effectiveAt: Date | undefined, now = new Date()): void {
  if (effectiveAt) {
    if (Number.isNaN(effectiveAt.getTime())) throw ApiError.badRequest('effectiveAt: must be a date-time');
    if (effectiveAt.getTime() < now.getTime()) {
      throw ApiError.badRequest(
        `effectiveAt: ${effectiveAt.toISOString()} is in the past; a price-book version starts now (omit effectiveAt) or later (tasks already accepted keep the version they were priced by)`,
      );
    }
    if (effectiveAt.getTime() > now.getTime() + MAX_LEAD_MS)
      throw ApiError.badRequest('effectiveAt: must be within ten years from now');
  }
}

function checkRows(rows: readonly PriceRow[]): void {
  rows.forEach((row, i) => {
    const at = `rates[${i}]`;
    const route = findRoute(row.model);
    if (!route) throw ApiError.badRequest(`${at}.model: "${row.model.slice(0, 60)}" is not a model of the catalog`);
    if (row.unit !== unitOf(route)) throw ApiError.badRequest(`${at}.unit: ${row.model} is priced in ${unitOf(route)}`);
    const components: readonly string[] = COMPONENTS_OF[route.kind];
    if (!components.includes(row.component)) {
      throw ApiError.badRequest(
        `${at}.component: ${row.model} is priced by ${components.join(' or ')}, not ${row.component}`,
      );
    }
    if (row.component === 'token' && !(TOKEN_CLASSES as readonly string[]).includes(row.key)) {
      throw ApiError.badRequest(
        `${at}.key: "${row.key.slice(0, 40)}" is not a token class (${TOKEN_CLASSES.join(', ')})`,
      );
    }
    if (row.component === 'request' && !/^[1-9]\d{0,3}$/.test(row.key))
      throw ApiError.badRequest(`${at}.key: a per-request price is keyed by a duration in seconds`);
    if (row.component !== 'token' && row.component !== 'request' && !/^[A-Za-z0-9.:]{1,20}$/.test(row.key)) {
      throw ApiError.badRequest(`${at}.key: "${row.key.slice(0, 40)}" is not a resolution`);
    }
    boundedAmount(`${at}.rate`, row.rate, { negative: false });
  });
}

@Injectable()
export class PriceBookService implements OnModuleDestroy {
  private books: PriceBook[] = [];
  private timer?: NodeJS.Timeout;

  constructor(
    @Inject(DATABASE) private readonly db: Database,
    private readonly events: CacheEvents,
  ) {
    events.on((e) => {
      if (e.kind === 'price-book') return this.reload();
    });
  }

  async init(): Promise<void> {
    await this.db.query(
      `INSERT INTO price_book_version (version, effective_at, note) VALUES (1, $1, 'seeded from upstream-api.md')
       ON CONFLICT DO NOTHING`,
      [SPEC_PRICE_BOOK_EFFECTIVE_AT],
    );
    const seeded = await this.db.query('SELECT 1 FROM price_rate WHERE version = 1 LIMIT 1');
    if (seeded.rowCount === 0) await this.insertRows(1, SPEC_PRICE_ROWS);
    await this.reload();
    this.timer = setInterval(() => void this.refresh().catch(() => {}), REFRESH_MS);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  /** The version in force at `at`: the highest version whose effective time has come. */
  inForce(at: Date = new Date()): PriceBook {
    for (let i = this.books.length - 1; i >= 0; i--) {
      if (this.books[i]!.effectiveAt <= at) return this.books[i]!;
    }
    return this.books[0]!;
  }

  version(version: number): PriceBook | undefined {
    return this.books.find((b) => b.version === version);
  }

  /**
   * A task's own version, loaded from the database when this instance has not seen it yet (another
   * instance published it moments ago). Never another version: a task is priced with the one it
   * was accepted under, or not yet (decisions §3).
   */
  async ensure(version: number): Promise<PriceBook> {
    const known = this.version(version);
    if (known) return known;
    await this.reload();
    const loaded = this.version(version);
    if (!loaded) throw new Error(`price-book version ${version} is not in the database`);
    return loaded;
  }

  /** Re-reads the versions now (a hold found this instance's in-force version stale). */
  async refreshNow(): Promise<void> {
    await this.reload();
  }

  /** A version as published: its times, note and every rate row (rates as exact strings). */
  async describe(version: number) {
    const head = await this.db.query<{ version: number; effective_at: Date; published_at: Date; note: string | null }>(
      'SELECT version, effective_at, published_at, note FROM price_book_version WHERE version = $1',
      [version],
    );
    if (!head.rows[0]) return null;
    const rates = await this.db.query<{
      model: string;
      unit: Unit;
      component: string;
      key: string;
      tier: string | null;
      tierMaxInput: number | null;
      rate: string;
    }>(
      `SELECT model, unit, component, key, tier, tier_max_input AS "tierMaxInput", rate::text AS rate
       FROM price_rate WHERE version = $1 ORDER BY model, component, tier NULLS FIRST, key`,
      [version],
    );
    const h = head.rows[0];
    const { contract } = await this.ensure(version);
    // Rates as canonical exact strings ("0.720" as stored from the spec reads "0.72"), each with its contracted rate.
    const canonical = rates.rows.map((r) => {
      const route = findRoute(r.model);
      const rate = dec(r.rate);
      const contracted = route ? contractedRateOf(contract, route, r.unit, { ...r, rate }) : rate;
      return { ...r, rate: rate.toFixed(), contractedRate: contracted.toFixed() };
    });
    return {
      version: h.version,
      effectiveAt: h.effective_at,
      publishedAt: h.published_at,
      note: h.note,
      rates: canonical,
      contract: contract.map(termView),
    };
  }

  all(): readonly PriceBook[] {
    return this.books;
  }

  /**
   * Publishes a new version effective at `effectiveAt`. Each row given sets one rate (model,
   * component, key, tier); every other rate of the previous version carries over unchanged. The
   * contract's terms carry over too, unless `contract` is given: then they are the whole contract
   * from that version on (decisions §19; an empty list ends it). The caller has checked rows or terms.
   */
  async publish(
    effectiveAt: Date | undefined,
    rows: PriceRow[],
    note?: string,
    contract?: readonly ContractTerm[],
  ): Promise<number> {
    if (contract) checkEffectiveAt(effectiveAt);
    else checkPublishable(effectiveAt, rows);
    const version = await this.db.transaction(async (client) => {
      // EXCLUSIVE: a hold batch takes ROW SHARE on this table before it reads its acceptance time
      // (spendgate_place_holds), so no batch straddles this publication: one that started before
      // commits first, one that starts after sees the new version.
      await client.query('LOCK TABLE price_book_version IN EXCLUSIVE MODE');
      const { rows: last } = await client.query<{ v: number; now: Date }>(
        'SELECT max(version) AS v, clock_timestamp() AS now FROM price_book_version',
      );
      const previous = last[0]!.v;
      const next = previous + 1;
      // The past, by the database's clock.
      if (effectiveAt && effectiveAt < last[0]!.now) checkEffectiveAt(effectiveAt, last[0]!.now);
      // "Now" is the database's clock to the microsecond, taken under the lock: a JavaScript Date
      // keeps milliseconds, and a version dated up to 1 ms early covered holds committed just
      // before it (found on PostgreSQL 15's pass: a task accepted under version 1 after 2's time).
      await client.query(
        'INSERT INTO price_book_version (version, effective_at, note) VALUES ($1, coalesce($2::timestamptz, clock_timestamp()), $3)',
        [next, effectiveAt ?? null, note ?? null],
      );
      // Carry forward every rate this version does not set.
      const keys = rows.map((r) => [r.model, r.component, r.key, r.tier ?? ''].join('|'));
      await client.query(
        `INSERT INTO price_rate (version, model, unit, component, key, tier, tier_max_input, rate)
         SELECT $1, model, unit, component, key, tier, tier_max_input, rate FROM price_rate
         WHERE version = $2 AND NOT (concat_ws('|', model, component, key, coalesce(tier, '')) = ANY($3::text[]))`,
        [next, previous, keys],
      );
      await this.insertRows(next, rows, client);
      await writeContractTerms(client, next, previous, contract);
      return next;
    });
    // This instance (both threads) prices with it before publishPrices answers, once it is committed.
    await this.db.afterCommit(async () => {
      await this.reload();
      await this.events.relayOnly({ kind: 'price-book' });
    });
    return version;
  }

  private async insertRows(
    version: number,
    rows: readonly PriceRow[],
    client: { query: Database['query'] } = this.db,
  ): Promise<void> {
    if (rows.length === 0) return;
    await client.query(
      `INSERT INTO price_rate (version, model, unit, component, key, tier, tier_max_input, rate)
       SELECT $1, r.model, r.unit::"Unit", r.component, r.key, r.tier, r.tier_max_input, r.rate::numeric
       FROM jsonb_to_recordset($2::jsonb) AS r(model text, unit text, component text, key text, tier text, tier_max_input int, rate text)`,
      [
        version,
        JSON.stringify(rows.map((r) => ({ ...r, tier_max_input: r.tierMaxInput ?? null, tier: r.tier ?? null }))),
      ],
    );
  }

  private async refresh(): Promise<void> {
    const { rows } = await this.db.query<{ v: number }>('SELECT max(version) AS v FROM price_book_version');
    if ((rows[0]?.v ?? 0) !== this.books.at(-1)?.version) await this.reload();
  }

  private async reload(): Promise<void> {
    const versions = await this.db.query<{ version: number; effective_at: Date }>(
      'SELECT version, effective_at FROM price_book_version ORDER BY version',
    );
    const rates = await this.db.query<{
      version: number;
      model: string;
      unit: Unit;
      component: PriceRow['component'];
      key: string;
      tier: string | null;
      tier_max_input: number | null;
      rate: string;
    }>(
      'SELECT version, model, unit, component, key, tier, tier_max_input, rate::text AS rate FROM price_rate ORDER BY id',
    );
    const contracts = await loadContractTerms(this.db);
    this.books = versions.rows.map((v) =>
      buildPriceBook(
        v.version,
        v.effective_at,
        rates.rows
          .filter((r) => r.version === v.version)
          .map((r) => ({
            model: r.model,
            unit: r.unit,
            component: r.component,
            key: r.key,
            rate: dec(r.rate).toFixed(),
            tier: r.tier ?? undefined,
            tierMaxInput: r.tier_max_input,
          })),
        contracts.get(v.version) ?? [],
      ),
    );
  }
}
