/**
 * A signed-in load's first queries, sent as soon as the session is known (main.tsx), beside the first
 * render rather than after it: urql's hooks subscribe in an effect, which runs after the first paint,
 * 20-50 ms later on a busy machine. The components ask the very same requests (query and variables,
 * from the same functions), and urql shares an operation in flight by its key, so each goes out once;
 * an answer that arrives before its component is read from urql's cache.
 */
import type { Client } from '@urql/core';
import { reviewCountRequest } from './parts/review-count';
import { EARLY } from './parts/early-warning';
import { PROJECTS } from './parts/project-picker';
import { overviewRequest } from './pages/overview';
import { parseRoute } from './route';
import type { Viewer } from './viewer';

export function askFirstQueries(client: Client, viewer: Viewer, hash: string): void {
  // The project looked at on a first render: a project key's own; anyone else starts with all theirs.
  const projectId = viewer.kind === 'PROJECT_KEY' ? viewer.projectId : null;
  const ask = (query: string, variables: object = {}, requestPolicy?: 'cache-first') =>
    void client.query(query, variables, requestPolicy ? { requestPolicy } : {}).toPromise();
  // In the order the page needs them: the reads thread takes them in turn, and the review count is not
  // what a person waits for.
  const route = parseRoute(hash);
  if (route.page === 'overview') {
    const { query, variables } = overviewRequest(route.params, viewer, projectId);
    ask(query, variables);
    if (viewer.kind !== 'PROJECT_KEY') ask(EARLY);
  }
  ask(PROJECTS, {}, 'cache-first');
  if (viewer.pages.includes('review')) {
    const { query, variables } = reviewCountRequest(projectId);
    ask(query, variables);
  }
}
