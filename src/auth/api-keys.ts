/**
 * Project API keys: `sg_<prefix>_<secret>`. Only a SHA-256 hash of the whole key is stored (the
 * key has 192 random bits, so a slow hash adds nothing); the prefix finds the row and the hashes
 * are compared in constant time.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export interface NewKey {
  key: string;
  prefix: string;
  hash: Buffer;
}

/**
 * The bearer secrets spendgate issues, told apart by their first letters: `sg_` a project's API
 * key, `sgp_` a person's access token, `sgs_` a service account's. The same shape for all three.
 */
export type SecretKind = 'sg' | 'sgp' | 'sgs';

export function generateKey(kind: SecretKind = 'sg'): NewKey {
  const prefix = randomBytes(6).toString('hex');
  const key = `${kind}_${prefix}_${randomBytes(24).toString('base64url')}`;
  return { key, prefix, hash: hashKey(key) };
}

/** A token of a person or service account: its kind and public prefix, or undefined. */
export function parseToken(token: string): { kind: 'sgp' | 'sgs'; prefix: string } | undefined {
  const match = /^(sgp|sgs)_([0-9a-f]{12})_[A-Za-z0-9_-]{32}$/.exec(token);
  return match ? { kind: match[1] as 'sgp' | 'sgs', prefix: match[2]! } : undefined;
}

/** A secret of any of the three kinds, with the prefix replaced: safe to show or log. */
export function redactSecret(text: string): string {
  return text.replace(
    /\b(sg|sgp|sgs|sga)_([0-9a-f]{12}_)?[A-Za-z0-9_-]{20,}/g,
    (_m, kind: string, prefix?: string) => `${kind}_${prefix ?? ''}…`,
  );
}

export function hashKey(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

export function parseKey(key: string): { prefix: string } | undefined {
  const match = /^sg_([0-9a-f]{12})_[A-Za-z0-9_-]{32}$/.exec(key);
  return match ? { prefix: match[1]! } : undefined;
}

export function sameHash(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Constant-time comparison of two secrets of any length (hashes both first). */
export function sameSecret(a: string, b: string): boolean {
  return sameHash(hashKey(a), hashKey(b));
}

/** `Authorization: Bearer <token>` → token. */
export function bearer(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  const match = value ? /^Bearer\s+(\S+)\s*$/i.exec(value) : null;
  return match?.[1];
}
