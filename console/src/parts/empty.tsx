import type { ComponentChildren } from 'preact';

/** What to do next, where there is nothing to show yet. */
export function Empty({ children }: { children: ComponentChildren }) {
  return <div class="empty">{children}</div>;
}
