/**
 * Who a submission is for (decisions §7): an end user (`X-Spendgate-User`) and tags
 * (`X-Spendgate-Tags: name=value,…`), added to the API key's default tags. Validated here, each
 * refusal a 400 naming the header; stored with the task; never forwarded to the vendor. Plain
 * TypeScript.
 *
 * A key's tags are set by the operator who issued it (a cost centre, a team): a request may add
 * tags of other names but not replace one of its key's, so a client cannot move its spend out of
 * the cost centre (or the tag budget) its key was given.
 */
import { ApiError } from '../common/api-error.js';

export const USER_HEADER = 'x-spendgate-user';
export const TAGS_HEADER = 'x-spendgate-tags';
export const MAX_TAGS = 10;

const TAG_NAME = /^[a-z0-9_.-]{1,64}$/;
/** Printable ASCII: HTTP header values are not reliably UTF-8, and ids that survive every hop are. */
const PRINTABLE = /^[\x20-\x7e]+$/;

export interface Attribution {
  user: string | null;
  /** "name=value", sorted by name; the key's and the request's. */
  tags: string[];
}

/** The end user of a request: 1 to 128 printable characters, or null when the header is absent. */
export function parseUser(header: string | undefined, field = 'X-Spendgate-User'): string | null {
  if (header === undefined) return null;
  const user = header.trim();
  if (user.length === 0 || user.length > 128 || !PRINTABLE.test(user)) {
    throw ApiError.badRequest(`${field}: must be 1 to 128 printable ASCII characters`);
  }
  return user;
}

/**
 * Tags as "name=value" pairs: names [a-z0-9_.-]{1,64}, values 1 to 128 printable characters without a comma, each name
 * once.
 */
export function parseTags(pairs: readonly string[], field: string): Map<string, string> {
  if (pairs.length > MAX_TAGS) throw ApiError.badRequest(`${field}: at most ${MAX_TAGS} tags`);
  const tags = new Map<string, string>();
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    const name = at < 0 ? pair.trim() : pair.slice(0, at).trim();
    const value = at < 0 ? '' : pair.slice(at + 1).trim();
    if (!TAG_NAME.test(name))
      throw ApiError.badRequest(
        `${field}: tag name "${name.slice(0, 64)}" must be 1 to 64 of a-z 0-9 _ . - (write name=value)`,
      );
    if (value.length === 0 || value.length > 128 || !PRINTABLE.test(value) || value.includes(',')) {
      throw ApiError.badRequest(
        `${field}: the value of tag ${name} must be 1 to 128 printable ASCII characters without a comma`,
      );
    }
    if (tags.has(name)) throw ApiError.badRequest(`${field}: tag ${name} is given twice`);
    tags.set(name, value);
  }
  return tags;
}

/** The request's header, split into pairs ("a=1, b=2"); an empty header names no tag. */
export function tagsHeaderPairs(header: string | undefined): string[] {
  if (header === undefined) return [];
  return header
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p.length > 0);
}

/** A request's attribution: its user, and its tags added to its key's defaults. */
export function attributionOf(headers: Record<string, string | undefined>, keyTags: readonly string[]): Attribution {
  const user = parseUser(headers[USER_HEADER]);
  const requested = parseTags(tagsHeaderPairs(headers[TAGS_HEADER]), 'X-Spendgate-Tags');
  const fixed = parseTags(keyTags, "the key's tags");
  for (const name of requested.keys()) {
    if (fixed.has(name))
      throw ApiError.badRequest(
        `X-Spendgate-Tags: tag ${name} is set by this API key (${name}=${fixed.get(name)}); a request cannot change it`,
      );
  }
  return { user, tags: canonicalTags(new Map([...fixed, ...requested])) };
}

/** "name=value" strings sorted by name: one spelling for the task, the key, the Idempotency-Key identity. */
export function canonicalTags(tags: Map<string, string>): string[] {
  return [...tags].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([n, v]) => `${n}=${v}`);
}
