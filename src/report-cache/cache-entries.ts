/**
 * What the report cache keeps and answers with (report-cache.service.ts): an answer, its entry, a
 * computation in flight, and the small rules around them.
 */
import { createHash } from 'node:crypto';
import fresh from 'fresh';
import { isUuid } from '../common/ids.js';
import type { BooksScope } from './books-stamp.js';

/** What a cached report can be: bytes as sent (written JSON, a CSV) or a JSON value. */
export type Cacheable = Buffer | string | readonly unknown[] | Record<string, unknown>;

export interface CachedAnswer<T extends Cacheable> {
  value: T;
  /** The stamp the answer claims: it includes every change counted up to it. */
  version: string;
  /** Every month of its range is closed now: the answer is final. */
  closed: boolean;
  computedAt: Date;
  /** A strong validator of the value's bytes (its ETag); '' when the cache is off. */
  digest: string;
  /** Served from memory or from a computation another request began. */
  hit: boolean;
}

export interface Entry {
  value: Cacheable;
  /** When its computation began (performance.now()): a request that arrived before may use it. */
  startedAt: number;
  version: string;
  computedAt: Date;
  digest: string;
  bytes: number;
  /** Which computation made it: a later one's answer is never replaced by an earlier one's. */
  flight: number;
}

export interface Flight {
  flight: number;
  startedAt: number;
  /** The same moment on the clock: when the answer's figures are of. */
  at: Date;
  promise: Promise<Entry>;
}

/**
 * When a request arrived (performance.now()), from its Fastify reply or a GraphQL context holding it:
 * before it waited for a read turn. Without either, now (later than the truth: only ever stricter).
 */
export function arrivalOf(replyOrContext: unknown): number {
  const holder = replyOrContext as { elapsedTime?: number; reply?: { elapsedTime?: number } } | undefined;
  return performance.now() - (holder?.elapsedTime ?? holder?.reply?.elapsedTime ?? 0);
}

/** Whether a stamp `version` counts at least what `than` counts: the same epoch, no fewer changes. */
export function atLeast(version: string, than: string): boolean {
  const [epoch, changes] = version.split('.');
  const [thanEpoch, thanChanges] = than.split('.');
  return epoch === thanEpoch && BigInt(changes!) >= BigInt(thanChanges!);
}

export function answerOf<T extends Cacheable>(entry: Entry, closed: boolean, hit: boolean): CachedAnswer<T> {
  const { value, version, computedAt, digest } = entry;
  return { value: value as T, version, closed, computedAt, digest, hit };
}

/** The value's size in bytes and a strong validator of them. */
export function measure(value: Cacheable): { bytes: number; digest: string } {
  const bytes = Buffer.isBuffer(value) ? value : Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));
  return { bytes: bytes.length, digest: createHash('sha256').update(bytes).digest('base64url').slice(0, 32) };
}

/**
 * A kept answer's bytes in shared memory (from 16 KB up, where a copy starts to cost): the reads worker
 * then hands them to the main thread without a copy (reads/posted-answers.ts). A kept answer is never
 * written again, so sharing it is safe.
 */
export function shared<T extends Cacheable>(value: T): T {
  if (!Buffer.isBuffer(value) || value.length < 16 * 1024 || value.buffer instanceof SharedArrayBuffer) return value;
  const out = Buffer.from(new SharedArrayBuffer(value.length));
  value.copy(out);
  return out as T;
}

export function stampable(scope: BooksScope): boolean {
  const { from, to, projectIds } = scope;
  return (
    Number.isFinite(from.getTime()) &&
    Number.isFinite(to.getTime()) &&
    to > from &&
    from.getUTCFullYear() >= 1 &&
    to.getUTCFullYear() <= 9999 &&
    (projectIds === undefined || projectIds === null || projectIds.every((id) => typeof id === 'string' && isUuid(id)))
  );
}

/**
 * Whether the client already holds the answer whose ETag is `etag` (its If-None-Match names it), by
 * jshttp's `fresh`. Only If-None-Match is given to it: `fresh` also answers "stale" to a request's
 * `Cache-Control: no-cache`, a rule for caches in between, while an origin server evaluates the
 * condition all the same (RFC 9110, 13.1.2), and fetch() adds `no-cache` to every request that carries
 * If-None-Match.
 */
export function holds(headers: Record<string, string | string[] | undefined>, etag: string): boolean {
  const condition = headers['if-none-match'];
  return typeof condition === 'string' && fresh({ 'if-none-match': condition }, { etag });
}
