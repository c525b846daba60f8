/**
 * The console's address: `#/<page>[/<arg>][?<params>]`. Everything a view depends on (range,
 * filters) lives in the params, so a view can be bookmarked, shared and reloaded as it was.
 */
import { useEffect, useState } from 'preact/hooks';

export interface Route {
  page: string;
  arg: string | undefined;
  params: URLSearchParams;
}

export function parseRoute(hash: string): Route {
  const [path = '', query = ''] = hash.replace(/^#\/?/, '').split('?');
  const [page, arg] = path.split('/');
  return {
    page: page || 'overview',
    arg: arg ? decodeURIComponent(arg) : undefined,
    params: new URLSearchParams(query),
  };
}

export function useRoute(): Route {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return parseRoute(hash);
}

/** The address of a page with these params (empty values left out). */
export function href(page: string, params: Record<string, string | null | undefined> = {}): string {
  const query = new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => !!e[1])).toString();
  return `#/${page}${query ? `?${query}` : ''}`;
}

/** Changes some params of the current page (null removes one); a new history entry. */
export function setParams(patch: Record<string, string | null>): void {
  const { page, arg, params } = parseRoute(location.hash);
  for (const [name, value] of Object.entries(patch)) {
    if (value === null || value === '') params.delete(name);
    else params.set(name, value);
  }
  const query = params.toString();
  location.hash = `#/${page}${arg ? `/${encodeURIComponent(arg)}` : ''}${query ? `?${query}` : ''}`;
}
