/**
 * A price-book version starts when it is published, by the database's clock to the microsecond
 * (decisions §3): a hold committed just before the publication took its lock was accepted before
 * the new version's effective time, never after it. Before, "now" crossed JavaScript as a Date
 * (milliseconds), so a version could be dated up to 1 ms before holds that the previous version
 * priced (PostgreSQL 15's pass of money-edges caught one task of 300).
 */
import pg from 'pg';
import type { Gateway } from '../../src/bootstrap.js';
import { ADMIN, freshDatabase, gateway, graphql } from '../support/harness.js';

let gw: Gateway;
let url: string;
beforeAll(async () => {
  url = await freshDatabase();
  gw = await gateway(url, { POLLER_ENABLED: 'false' });
}, 60_000);
afterAll(() => gw.close());

test('a version published right after a hold commits starts after that hold, to the microsecond', async () => {
  const hold = new pg.Client({ connectionString: url });
  await hold.connect();
  try {
    for (let round = 0; round < 20; round++) {
      // What a hold does: ROW SHARE on the price book, its acceptance time, commit.
      await hold.query('BEGIN');
      await hold.query('LOCK TABLE price_book_version IN ROW SHARE MODE');
      const publishing = graphql(
        gw,
        ADMIN,
        `mutation { publishPrices(note: "r${round}", rates: [{ model: "seedream-4.0", unit: USD, component: "image", key: "1K", rate: "0.0${10 + round}" }]) }`,
      );
      await new Promise((r) => setTimeout(r, 100)); // the publication now waits for the lock
      // Its last clock reading and its commit in one message, microseconds apart, as inside the hold function.
      const [{ rows }] = (await hold.query('SELECT clock_timestamp()::text AS at; COMMIT')) as unknown as [
        pg.QueryResult<{ at: string }>,
        pg.QueryResult,
      ];
      const published = (await publishing).body;
      expect(published.errors).toBeUndefined();
      const { rows: after } = await hold.query<{ later: boolean; effective: string }>(
        'SELECT effective_at > $1::timestamptz AS later, effective_at::text AS effective FROM price_book_version WHERE version = $2',
        [rows[0]!.at, published.data.publishPrices],
      );
      expect({ round, hold: rows[0]!.at, ...after[0] }).toEqual({
        round,
        hold: rows[0]!.at,
        effective: after[0]!.effective,
        later: true,
      });
    }
  } finally {
    await hold.end();
  }
});
