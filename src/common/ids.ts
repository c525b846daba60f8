/**
 * Identifiers as the outside world sends them. One place for the patterns, so that an id that
 * cannot be one of ours (not a UUID, or a number past PostgreSQL's bigint) is answered as "not
 * found" or "not an id" before it reaches a query, never as a database error.
 */

import { ApiError } from './api-error.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** PostgreSQL's bigint ends here: 2^63 − 1. */
const BIGINT_MAX = 9_223_372_036_854_775_807n;

export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/** A positive bigint in canonical decimal form ("42", never "042" or "+42"), or undefined. */
export function bigintId(value: string): string | undefined {
  if (!/^[1-9]\d{0,18}$/.test(value)) return undefined;
  return BigInt(value) <= BIGINT_MAX ? value : undefined;
}

/**
 * A task id as clients write it: the vendor's numeric taskId, or `gw-<n>` for a task the vendor
 * never numbered (its gateway id). Undefined when it cannot name any task.
 */
export function parseTaskRef(value: string): { upstreamTaskId: string } | { internalId: string } | undefined {
  const internal = /^gw-(\d+)$/.exec(value)?.[1];
  if (internal !== undefined) {
    const id = bigintId(internal);
    return id ? { internalId: id } : undefined;
  }
  const id = bigintId(value);
  return id ? { upstreamTaskId: id } : undefined;
}

/** Ids are UUIDs; anything else is refused naming the field, before it reaches a query. */
export function requireUuid(field: string, value: string): void {
  if (!isUuid(value)) throw ApiError.badRequest(`${field}: "${clip(value)}" is not an id (a UUID)`);
}

/** Text shown back to a client (ids it sent, names): at most `max` characters. */
export function clip(text: string, max = 40): string {
  return text.length > max ? `${text.slice(0, max - 3)}...` : text;
}
