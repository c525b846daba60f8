/**
 * `npm run bench:seal`: sealing the ledger (decisions §13) over 1,000,000 entries, and the hold
 * path meanwhile. One embedded PostgreSQL (defaults, fsync on): 1M entries written, then 64
 * clients place holds on a hot budget for BENCH_SECONDS without sealing, then again while the
 * sealer (its own connection, as in the gateway) seals the million. Prints the sealing time and
 * holds per second in both phases; writes bench/results/seal.json; asserts nothing.
 */
import { Database } from '../src/database/database.js';
import { LedgerSealer } from '../src/ledger/ledger-sealer.js';
import { LedgerService, type HoldRequest } from '../src/ledger/ledger.service.js';
import { findRoute } from '../src/catalog/catalog.js';
import { quote } from '../src/pricing/engine.js';
import { Money } from '../src/pricing/money.js';
import { buildPriceBook, SPEC_PRICE_ROWS } from '../src/pricing/price-book.js';
import { machine, publish, speedProbe, withScratchPostgres } from './support.js';

const ENTRIES = Number(process.env.BENCH_ENTRIES ?? 1_000_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const CLIENTS = 64;
const route = findRoute('seedream-4.0')!;
const q = quote({ route, body: { model: route.id, prompt: 'bench' } }, buildPriceBook(1, new Date(0), SPEC_PRICE_ROWS));

await withScratchPostgres('seal', ['max_connections=200'], async (server) => {
  const probe = speedProbe();
  const db = new Database(server.url, 16);
  const { rows } = await db.query<{ id: string }>(
    `WITH p AS (INSERT INTO project (id, name) VALUES (gen_random_uuid(), 'sealed'), (gen_random_uuid(), 'hot') RETURNING id)
     SELECT id FROM p`,
  );
  const [sealedProject, hotProject] = rows.map((r) => r.id) as [string, string];
  await db.query(
    `INSERT INTO budget (id, project_id, unit, "limit", period, hard) VALUES (gen_random_uuid(), $1, 'USD', 100000000, 'MONTHLY', true)`,
    [hotProject],
  );
  const written = Date.now();
  for (let i = 0; i < ENTRIES; i += 100_000) {
    await db.query(
      `INSERT INTO ledger_entry (project_id, kind, unit, amount, effective_at, reason)
       SELECT $1, 'adjustment', 'USD', (g % 1000) / 100.0, now() - make_interval(secs => g % 86400), 'bench ' || g FROM generate_series($2::int, $3::int) g`,
      [sealedProject, i + 1, Math.min(i + 100_000, ENTRIES)],
    );
  }
  console.log(
    `wrote ${ENTRIES.toLocaleString('en')} ledger entries in ${((Date.now() - written) / 1000).toFixed(1)} s`,
  );
  const ledger = new LedgerService(db);
  const request: HoldRequest = {
    projectId: hotProject,
    apiKeyId: null,
    model: route.id,
    family: route.family,
    kind: route.kind,
    hold: Money.of('USD', q.amount),
    quote: q,
    priceBookVersion: 1,
  };

  const drive = async (until: () => boolean) => {
    let held = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (!until()) if ((await ledger.hold(request)).outcome === 'held') held++;
      }),
    );
    return Math.round(held / ((performance.now() - started) / 1000));
  };

  const quietEnd = Date.now() + SECONDS * 1000;
  const quiet = await drive(() => Date.now() > quietEnd);

  const sealDb = new Database(server.url, 1, { applicationName: 'spendgate-sealer', nice: 19 }); // as in the gateway
  const sealer = new LedgerSealer(sealDb, 0.5); // resting half as long as it works, as in the gateway
  await sealer.round(); // the mark
  let sealed = 0;
  let sealing = true;
  const sealStart = performance.now();
  const sealingDone = (async () => {
    while (sealed < ENTRIES) sealed += await sealer.round();
    sealing = false;
    return (performance.now() - sealStart) / 1000;
  })();
  const minEnd = Date.now() + SECONDS * 1000;
  const busy = await drive(() => !sealing && Date.now() > minEnd);
  const sealSeconds = await sealingDone;
  const afterEnd = Date.now() + SECONDS * 1000;
  const after = await drive(() => Date.now() > afterEnd); // quiet again: the hold path's own drift over the run
  await sealDb.close();
  await db.close();
  const out = {
    machine: `${machine()}, PostgreSQL embedded, defaults (fsync on)`,
    date: new Date().toISOString().slice(0, 10),
    speedProbeMs: [probe, speedProbe()],
    entries: ENTRIES,
    sealed,
    sealSeconds: Number(sealSeconds.toFixed(1)),
    entriesSealedPerSecond: Math.round(sealed / sealSeconds),
    holdsPerSecondQuiet: quiet,
    holdsPerSecondWhileSealing: busy,
    holdsPerSecondQuietAfter: after,
    ratio: Number((busy / ((quiet + after) / 2)).toFixed(2)),
  };
  console.log(
    `sealed ${sealed.toLocaleString('en')} entries in ${out.sealSeconds} s; holds/s ${quiet} quiet before, ${busy} while sealing, ${after} quiet after (ratio to the quiet mean ${out.ratio})`,
  );
  publish('seal', out);
});
