/**
 * Who is signed in, as GraphQL's `viewer` and GET /auth/session answer it. Its own module: the session
 * (session.ts) and the sign-in page both need it, and neither may import the other's way round.
 */
export interface Viewer {
  kind: 'ADMIN_TOKEN' | 'PERSON' | 'SERVICE_ACCOUNT' | 'PROJECT_KEY';
  admin: boolean;
  role: 'OWNER' | 'FINANCE' | 'LEAD' | 'VIEWER' | null;
  allProjects: boolean;
  projectIds: string[];
  name: string | null;
  email: string | null;
  /** Capabilities held on some project (read, budgets, keys, webhooks, corrections, books, admin, people, audit). */
  can: string[];
  /** The pages this caller may open. */
  pages: string[];
  projectId: string | null;
  projectName: string | null;
}
