/**
 * Pages fetched when first opened, so the first load carries only the shell, the sign-in and the
 * overview (bench:console measures it: under 30 KB of JavaScript gzipped).
 */
import type { ComponentType, FunctionComponent } from 'preact';
import { useEffect, useState } from 'preact/hooks';

export function lazy<P extends object>(load: () => Promise<ComponentType<P>>): FunctionComponent<P> {
  let loaded: ComponentType<P> | undefined;
  let pending: Promise<void> | undefined;
  return (props: P) => {
    const [, setReady] = useState(false);
    pending ??= load().then((component) => {
      loaded = component;
    });
    useEffect(() => {
      let live = true;
      void pending!.then(() => live && setReady(true));
      return () => {
        live = false;
      };
    }, []);
    const Page = loaded;
    return Page ? <Page {...props} /> : <p class="loading">Loading…</p>;
  };
}
