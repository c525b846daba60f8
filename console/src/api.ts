/**
 * The console's GraphQL client (urql): it talks only to the gateway's public /graphql, like any
 * other client of the API, authenticated by the session cookie and carrying the CSRF token.
 */
import { cacheExchange, Client, CombinedError, fetchExchange } from '@urql/core';
import { session } from './session';

export function apiClient(): Client {
  return new Client({
    url: '/graphql',
    exchanges: [cacheExchange, fetchExchange],
    fetch: conditionalFetch,
    fetchOptions: () => ({ credentials: 'same-origin', headers: { 'x-csrf-token': session.csrf() } }),
    requestPolicy: 'cache-and-network',
    preferGetMethod: false,
  });
}

/** Answers kept with their ETag, by request body: the last few queries' (a page's), for a 304 to stand in. */
const held = new Map<string, { etag: string; body: string; type: string }>();
const HELD = 32;

/**
 * fetch, conditional: a query the gateway answered with an ETag is asked again with If-None-Match,
 * and its 304 (nothing changed in the books it covers: decisions §22) is answered with the body kept.
 */
export async function conditionalFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const body = typeof init?.body === 'string' ? init.body : undefined;
  if (!body) return fetch(input, init);
  const kept = held.get(body);
  const headers = new Headers(init?.headers);
  if (kept) headers.set('if-none-match', kept.etag);
  const res = await fetch(input, { ...init, headers });
  if (res.status === 304 && kept) {
    held.delete(body);
    held.set(body, kept); // the most recently used last
    return new Response(kept.body, { status: 200, headers: { 'content-type': kept.type } });
  }
  const etag = res.headers.get('etag');
  if (res.ok && etag) {
    held.delete(body);
    held.set(body, {
      etag,
      body: await res.clone().text(),
      type: res.headers.get('content-type') ?? 'application/json',
    });
    if (held.size > HELD) held.delete(held.keys().next().value!);
  }
  return res;
}

/** The API's own message (its refusals say what to change), without urql's prefix. */
export function errorText(error: CombinedError | Error | undefined): string {
  if (!error) return '';
  if (error instanceof CombinedError) {
    if (error.graphQLErrors.length) return error.graphQLErrors.map((e) => e.message).join('; ');
    if (error.networkError) return `the gateway did not answer: ${error.networkError.message}`;
  }
  return error.message;
}

export type { Unit } from './format';
import type { Unit } from './format';
export interface Money {
  unit: Unit;
  amount: string;
}
