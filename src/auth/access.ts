/**
 * Who may do what: the admin (ADMIN_TOKEN) reads and writes everything; a project API key reads
 * its own project only. The same rules for GraphQL, the CSV reports and the console; refusals are
 * ApiErrors (a 403 over HTTP, FORBIDDEN in GraphQL), and a project key never learns whether
 * another project exists.
 */
import { ApiError } from '../common/api-error.js';

export type Principal = { kind: 'admin' } | { kind: 'project'; projectId: string };

/** Throws unless the principal may read `projectId`. */
export function assertCanRead(principal: Principal, projectId: string): void {
  if (principal.kind === 'admin' || principal.projectId === projectId) return;
  throw ApiError.forbidden(`this API key can only read its own project; project ${projectId} is not visible to it`);
}

export function assertAdmin(principal: Principal, action: string): void {
  if (principal.kind !== 'admin') throw ApiError.forbidden(`${action} needs the ADMIN_TOKEN; a project API key can only read its own project`);
}

/**
 * The projects a caller may read, for a list filter: the admin reads what it asks for (all when
 * nothing is asked); a project key reads its own project, and asking for another is refused.
 */
export function scopeProjects(who: Principal, projectIds: string[] | undefined): string[] | undefined {
  if (who.kind === 'admin') return projectIds;
  if (projectIds?.some((id) => id !== who.projectId)) throw ApiError.forbidden('projectIds: this API key can only read its own project');
  return [who.projectId];
}
