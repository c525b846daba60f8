/**
 * The main thread frees the Buffers it relays for the reads worker young (reads/relayed-garbage.ts,
 * issue 34): once every RELAY_BYTES_PER_SCAVENGE relayed, one scavenge when the turn ends, instead
 * of the mark-compacts of the whole submission thread that those Buffers' outside memory set off.
 */
import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import vm from 'node:vm';
import { RELAY_BYTES_PER_SCAVENGE, RelayedGarbage, youngGenerationCollector } from '../src/reads/relayed-garbage.js';
import { ADMIN, freshDatabase, gateway, graphql } from './support/harness.js';
import type { Gateway } from '../src/bootstrap.js';

/** Counts this thread's collections that someone forced (gc()), by kind, while `observe` runs. */
async function forcedCollections<T>(observe: (counts: { minor: number; major: number }) => Promise<T>): Promise<T> {
  const counts = { minor: 0, major: 0 };
  const seen = (entries: PerformanceEntry[]) => {
    for (const entry of entries) {
      const { kind, flags } = (entry as PerformanceEntry & { detail: { kind: number; flags: number } }).detail;
      if (!(flags & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED)) continue;
      if (kind === constants.NODE_PERFORMANCE_GC_MINOR) counts.minor++;
      else counts.major++;
    }
  };
  const observer = new PerformanceObserver((list) => seen(list.getEntries()));
  observer.observe({ entryTypes: ['gc'] });
  try {
    return await observe(counts);
  } finally {
    seen(observer.takeRecords());
    observer.disconnect();
  }
}

const turn = () => new Promise((resolve) => setImmediate(resolve));
/** Entries reach the observer on a later turn than their collection. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

test('the collector scavenges, and leaves no global gc behind for other code', async () => {
  const collect = youngGenerationCollector();
  expect(collect).toBeInstanceOf(Function);
  await forcedCollections(async (counts) => {
    collect!();
    await settle();
    expect(counts).toEqual({ minor: 1, major: 0 });
  });
  // The flag was set only while the collector was taken: a context made now has no gc.
  expect(vm.runInNewContext('typeof gc')).toBe('undefined');
});

test('one scavenge per RELAY_BYTES_PER_SCAVENGE relayed, after the turn, however many relays cross it', async () => {
  let collected = 0;
  const garbage = new RelayedGarbage(() => collected++, 1000);
  garbage.relayed(600);
  garbage.relayed(399);
  await turn();
  expect(collected).toBe(0); // 999 bytes: not yet

  garbage.relayed(1);
  expect(collected).toBe(0); // not inside the relay's own turn
  garbage.relayed(5000); // a second crossing in the same turn: still one
  await turn();
  expect(collected).toBe(1);

  garbage.relayed(999); // counted afresh after a scavenge
  await turn();
  expect(collected).toBe(1);
  garbage.relayed(1);
  await turn();
  expect(collected).toBe(2);

  // Nothing moved, or a nonsense count, counts nothing.
  garbage.relayed(0);
  garbage.relayed(-5000);
  garbage.relayed(Number.NaN);
  garbage.relayed(999);
  await turn();
  expect(collected).toBe(2);

  // Without a collector (a V8 without one), relays are not counted at all.
  expect(() => new RelayedGarbage(undefined, 1).relayed(10)).not.toThrow();
  expect(RELAY_BYTES_PER_SCAVENGE).toBe(4 * 2 ** 20);
});

describe('through the gateway', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await gateway(await freshDatabase());
  }, 60_000);
  afterAll(() => gw.close());

  test('relayed GraphQL answers: no scavenge below the bound, one once it is passed', async () => {
    // The schema's introspection: an answer of some size that the reads worker writes and the main thread relays.
    const INTROSPECTION = '{ __schema { types { name kind description fields { name description args { name description } type { name kind ofType { name kind } } } } } }';
    const first = await graphql(gw, ADMIN, INTROSPECTION);
    expect(first.status).toBe(200);
    const size = first.text.length;
    expect(size).toBeGreaterThan(10_000);
    await settle();

    await forcedCollections(async (counts) => {
      // Well below the bound (counting each request's headers and body too): none.
      let relayed = size; // the first answer above already counted
      while (relayed + size < RELAY_BYTES_PER_SCAVENGE * 0.8) {
        expect((await graphql(gw, ADMIN, INTROSPECTION)).status).toBe(200);
        relayed += size;
      }
      await settle();
      expect(counts.minor).toBe(0);
      // Past it: one scavenge of the main thread (this one: the gateway runs in this process), none of the old generation.
      while (relayed < RELAY_BYTES_PER_SCAVENGE * 1.2) {
        expect((await graphql(gw, ADMIN, INTROSPECTION)).status).toBe(200);
        relayed += size;
      }
      await settle();
      expect(counts.minor).toBe(1);
      expect(counts.major).toBe(0);
    });
  }, 120_000);

  test('an upload relayed to the worker counts too: a 5 MB vendor statement, a small answer, one scavenge', async () => {
    const rows = Array.from({ length: 90_000 }, (_, i) => `${9_000_000 + i},glm-5.3,2026-11-02T10:00:00Z,12.500000000000000000,CREDITS`);
    const csv = `task_id,model,time,amount,unit\n${rows.join('\n')}\n`;
    expect(csv.length).toBeGreaterThan(RELAY_BYTES_PER_SCAVENGE * 1.2);
    await forcedCollections(async (counts) => {
      const res = await fetch(`${gw.url}/reports/vendor-statements`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'text/csv' },
        body: csv,
      });
      const answer = await res.text();
      expect(res.status).toBe(201);
      expect(answer.length).toBeLessThan(10_000); // the bytes that count are the upload's
      await settle();
      expect(counts.minor).toBeGreaterThanOrEqual(1);
      expect(counts.major).toBe(0);
    });
  }, 120_000);
});
