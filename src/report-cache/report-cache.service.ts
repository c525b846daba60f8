/**
 * Answers that cost nothing when nothing changed (decisions §22). The reads worker keeps each report
 * answer it computed (a month's spendReport, a CSV, a FOCUS export), keyed by the query and what the
 * caller may see, with the books stamp it read before computing (books-stamp.ts). A request reads the
 * stamp (one indexed query) and is answered from memory while it is the same; when it moved, the
 * answer is computed once, however many callers ask meanwhile: they wait for that computation
 * (single flight), and its answer claims the stamp it read. Every instance reads the same counters,
 * so a change made anywhere is seen everywhere at the next request; nothing has to be told.
 *
 * Each answer is of the books as they were at some moment after the request arrived: a request is
 * answered from memory when the stamp is unchanged, or with a computation that began after it arrived
 * (one in flight, or one that finished while it waited for a read turn). A request that arrives while
 * a computation is in flight waits for it and then for the next, which serves every such request at
 * once. So a person who changed something sees it in their next read, on any instance.
 *
 * Bounded: REPORT_CACHE_MB of answers, least recently used first out; 0 turns the cache off.
 */
import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { CONFIG, type Config } from '../config/config.js';
import { Database, REPORTS_DATABASE } from '../database/database.js';
import {
  readProjectStamps,
  readStamp,
  scopeKey,
  type BooksScope,
  type BooksStamp,
  type ProjectStamp,
  type ProjectStamps,
} from './books-stamp.js';
import {
  answerOf,
  atLeast,
  measure,
  shared,
  stampable,
  type Cacheable,
  type CachedAnswer,
  type Entry,
  type Flight,
} from './cache-entries.js';

export { arrivalOf, measure, type Cacheable, type CachedAnswer } from './cache-entries.js';

@Injectable()
export class ReportCache {
  private readonly entries?: LRUCache<string, Entry>;
  private readonly flights = new Map<string, Flight>();
  /** Stamps read for one request, by scope: a page's many reports read each once. */
  private readonly stamps = new WeakMap<object, Map<string, Promise<unknown>>>();
  private nextFlight = 0;

  constructor(
    @Inject(REPORTS_DATABASE) private readonly db: Database,
    @Inject(CONFIG) config: Config,
  ) {
    const maxSize = config.REPORT_CACHE_MB * 1024 * 1024;
    if (maxSize > 0)
      this.entries = new LRUCache<string, Entry>({
        maxSize,
        // One answer never takes more than a quarter: a huge export is computed each time rather than
        // pushing out every dashboard's answers.
        maxEntrySize: Math.floor(maxSize / 4),
        sizeCalculation: (e) => Math.max(1, e.bytes + e.version.length + 200),
      });
  }

  /**
   * The answer for `key` over `scope`: from memory while the books stamp is what it was, else computed
   * once. `request` is the request's own object (a GraphQL context, a Fastify request): the stamps it
   * reads are kept with it; `arrivedAt` is when it arrived (arrivalOf). A scope the cache cannot stamp
   * (a date or id that is not one) goes straight to `compute`, whose own checks refuse it.
   */
  async answer<T extends Cacheable>(
    request: object,
    arrivedAt: number,
    key: string,
    scope: BooksScope,
    compute: () => Promise<T>,
  ): Promise<CachedAnswer<T>> {
    if (!this.entries || !stampable(scope)) return this.uncached(compute);
    const stamp = await this.stampOf(request, scope);
    return this.answerAt(key, arrivedAt, stamp, () => readStamp(this.db, scope), compute);
  }

  /**
   * A report whose rows come project by project (grouped by project first, in the order of the keys,
   * all of them): kept per project, so a settlement in one project recomputes that project's part
   * alone and the answer is the parts joined. Many stale parts (a cold start) are computed together,
   * in one query, by `parts.all` (the parts by project name). Undefined when the cache is off, the
   * scope cannot be stamped, or two projects in it share a name (their rows would interleave): the
   * caller then asks `answer`.
   */
  async answerByProject<T extends Buffer | readonly unknown[], U>(
    request: object,
    arrivedAt: number,
    key: string,
    scope: BooksScope,
    parts: {
      all: () => Promise<Map<string, T>>;
      one: (projectId: string) => Promise<T>;
      /** A project with no rows. */
      empty: T;
      join: (parts: T[]) => U;
    },
  ): Promise<(Omit<CachedAnswer<T>, 'value'> & { value: U }) | undefined> {
    if (!this.entries || !stampable(scope)) return undefined;
    const stamps = await this.projectStampsOf(request, scope);
    if (!stamps) return undefined;
    const partKey = (id: string) => `${key}\u0000${id}`;
    // A part serves this answer when it holds at least what this request's stamp counts for its project: the
    // answer then claims that stamp, one reading of every project's counters (a sum of parts' own stamps, read at
    // different moments, would claim a state the books were never in).
    const covers = (p: ProjectStamp) => (held: Entry | undefined) =>
      held !== undefined && atLeast(held.version, p.version);
    const stale = stamps.projects.filter((p) => !covers(p)(this.entries!.get(partKey(p.id))));
    const together = stale.length > 4 && stale.length > stamps.projects.length / 4;
    if (together) {
      // Many at once (a cold start): every part in one computation, which the parts below then find.
      await this.together(`${key}\u0000*`, arrivedAt, async (flight) => {
        const now = await readProjectStamps(this.db, scope);
        const byName = await parts.all();
        for (const p of now?.projects ?? [])
          this.store(partKey(p.id), p.version, byName.get(p.name) ?? parts.empty, flight);
      });
    }
    const answers = await Promise.all(
      stamps.projects.map((p) =>
        this.answerAt(
          partKey(p.id),
          arrivedAt,
          { version: p.version, closed: stamps.closed },
          async () => {
            const now = await readProjectStamps(this.db, { ...scope, projectIds: [p.id] });
            return { version: now?.projects[0]?.version ?? p.version, closed: stamps.closed };
          },
          () => parts.one(p.id),
          covers(p),
        ),
      ),
    );
    const value = parts.join(answers.map((a) => a.value));
    const oldest = answers.reduce<CachedAnswer<T> | undefined>(
      (o, a) => (!o || a.computedAt < o.computedAt ? a : o),
      undefined,
    );
    return {
      value,
      version: `${stamps.epoch}.${stamps.projects.reduce((sum, p) => sum + BigInt(p.changes), 0n)}`,
      closed: stamps.closed,
      computedAt: oldest?.computedAt ?? new Date(),
      digest: createHash('sha256')
        .update(answers.map((a) => a.digest).join(','))
        .digest('base64url')
        .slice(0, 32),
      hit: !together && answers.every((a) => a.hit),
    };
  }

  /**
   * `key`'s answer: held while `stamp` is what it was stamped with, else computed once (see the class).
   * `covers`, when given, decides instead which entry serves (a part of answerByProject's), and a
   * computation in flight is waited for and then judged the same way.
   */
  private async answerAt<T extends Cacheable>(
    key: string,
    arrivedAt: number,
    stamp: BooksStamp,
    restamp: () => Promise<BooksStamp>,
    compute: () => Promise<T>,
    covers?: (entry: Entry) => boolean,
  ): Promise<CachedAnswer<T>> {
    for (let waited = false; ; waited = true) {
      const held = this.entries!.get(key);
      if (held && (covers ? covers(held) : held.version === stamp.version || held.startedAt >= arrivedAt)) {
        return answerOf<T>(held, stamp.closed, true);
      }
      const flying = this.flights.get(key);
      if (flying && !covers && flying.startedAt >= arrivedAt) {
        return answerOf<T>(await flying.promise, stamp.closed, true);
      }
      if (flying) {
        // Begun before this request arrived: it may miss a change the caller already saw. Wait for it, then look again.
        await flying.promise.catch(() => undefined);
        continue;
      }
      const flight = this.newFlight();
      // After waiting, the stamp is read again after the flight began, as its answer will be.
      const stamped = waited ? restamp() : Promise.resolve(stamp);
      flight.promise = stamped.then((s) => this.compute(key, s, flight, compute));
      this.flights.set(key, flight);
      try {
        return answerOf<T>(await flight.promise, stamp.closed, false);
      } finally {
        if (this.flights.get(key) === flight) this.flights.delete(key);
      }
    }
  }

  /**
   * An answer that never changes once it exists (a statement as kept at a close, by its row): computed
   * once per instance, no stamp to read.
   */
  async kept<T extends Cacheable>(key: string, compute: () => Promise<T>): Promise<CachedAnswer<T>> {
    if (!this.entries) return this.uncached(compute);
    const held = this.entries.get(key);
    if (held) return answerOf<T>(held, true, true);
    const flight = this.newFlight();
    flight.promise = this.compute(key, { version: 'kept', closed: true }, flight, compute);
    return answerOf<T>(await flight.promise, true, false);
  }

  private async uncached<T extends Cacheable>(compute: () => Promise<T>): Promise<CachedAnswer<T>> {
    const value = await compute();
    return { value, version: '', closed: false, computedAt: new Date(), digest: '', hit: false };
  }

  private async compute(key: string, stamp: BooksStamp, flight: Flight, compute: () => Promise<Cacheable>) {
    return this.store(key, stamp.version, await compute(), flight);
  }

  /** Keeps `value` under `key`, unless a later computation already left its own there. */
  private store(key: string, version: string, computed: Cacheable, flight: Flight): Entry {
    const value = shared(computed);
    const { bytes, digest } = measure(value);
    const entry: Entry = {
      value,
      version,
      computedAt: flight.at,
      startedAt: flight.startedAt,
      digest,
      bytes,
      flight: flight.flight,
    };
    const held = this.entries!.get(key, { updateAgeOnGet: false });
    if (!held || held.flight < flight.flight) this.entries!.set(key, entry);
    return entry;
  }

  /**
   * One computation that fills many entries itself (answerByProject's cold start), run once however many
   * requests ask: a request joins one that began after it arrived, else waits for it and begins the next.
   */
  private async together(key: string, arrivedAt: number, fill: (flight: Flight) => Promise<void>): Promise<void> {
    for (;;) {
      const flying = this.flights.get(key);
      if (flying && flying.startedAt >= arrivedAt) {
        await flying.promise;
        return;
      }
      if (flying) {
        await flying.promise.catch(() => undefined);
        continue;
      }
      const flight = this.newFlight();
      flight.promise = fill(flight).then(() => undefined as unknown as Entry);
      this.flights.set(key, flight);
      try {
        await flight.promise;
        return;
      } finally {
        if (this.flights.get(key) === flight) this.flights.delete(key);
      }
    }
  }

  private newFlight(): Flight {
    return { flight: ++this.nextFlight, startedAt: performance.now(), at: new Date(), promise: undefined! };
  }

  private projectStampsOf(request: object, scope: BooksScope): Promise<ProjectStamps | undefined> {
    return this.memo(request, `projects|${scopeKey(scope)}`, () => readProjectStamps(this.db, scope));
  }

  private memo<T>(request: object, key: string, read: () => Promise<T>): Promise<T> {
    let held = this.stamps.get(request);
    if (!held) this.stamps.set(request, (held = new Map()));
    let value = held.get(key) as Promise<T> | undefined;
    if (!value) held.set(key, (value = read()));
    return value;
  }

  private stampOf(request: object, scope: BooksScope): Promise<BooksStamp> {
    return this.memo(request, scopeKey(scope), () => readStamp(this.db, scope));
  }
}
