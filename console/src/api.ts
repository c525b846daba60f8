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
    fetchOptions: () => ({ credentials: 'same-origin', headers: { 'x-csrf-token': session.csrf() } }),
    requestPolicy: 'cache-and-network',
    preferGetMethod: false,
  });
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
