/**
 * Deciding a caller's access with the table in permissions.ts, for GraphQL, the CSV reports, the
 * CLI and the console. A refusal is an ApiError (403 over HTTP, FORBIDDEN in GraphQL), and it is
 * the same whether the project asked about exists or not: a caller never learns of a project it
 * may not see.
 *
 * The callers (decisions §11): the ADMIN_TOKEN (an owner of everything, break-glass), a person or
 * a service account (a role on every project or on named ones), a project's API key (reads its
 * own project).
 */
import { ApiError } from '../common/api-error.js';
import { ROLE_CAPABILITIES, type Capability, type Role } from './permissions.js';

export type Principal =
  | { kind: 'admin' }
  | { kind: 'project'; projectId: string; keyPrefix?: string }
  | { kind: 'person'; id: string; email: string; role: Role; all: boolean; projectIds: string[]; sessionId?: string }
  | { kind: 'service'; id: string; name: string; role: Role; all: boolean; projectIds: string[] };

/** How the audit trail names a caller. */
export function actorOf(who: Principal): { kind: string; id: string | null; label: string } {
  switch (who.kind) {
    case 'admin':
      return { kind: 'admin-token', id: null, label: 'ADMIN_TOKEN' };
    case 'project':
      return {
        kind: 'api-key',
        id: who.keyPrefix ?? null,
        label: `api key ${who.keyPrefix ?? ''} of project ${who.projectId}`,
      };
    case 'person':
      return { kind: 'person', id: who.id, label: who.email };
    case 'service':
      return { kind: 'service-account', id: who.id, label: `service account ${who.name}` };
  }
}

function capabilities(who: Principal): readonly Capability[] {
  if (who.kind === 'admin') return ROLE_CAPABILITIES.OWNER;
  if (who.kind === 'project') return ['read'];
  return ROLE_CAPABILITIES[who.role];
}

/** Whether the caller's grant covers every project. */
export function coversAll(who: Principal): boolean {
  return (
    who.kind === 'admin' || ((who.kind === 'person' || who.kind === 'service') && (who.role === 'OWNER' || who.all))
  );
}

/** The projects the caller's grant names (undefined: all of them). */
export function grantedProjects(who: Principal): string[] | undefined {
  if (coversAll(who)) return undefined;
  if (who.kind === 'project') return [who.projectId];
  return (who as { projectIds: string[] }).projectIds;
}

/** Whether the caller has `capability` on some project (or globally): the first, cheap check. */
export function hasCapability(who: Principal, capability: Capability | null): boolean {
  return capability === null || capabilities(who).includes(capability);
}

export function can(who: Principal, capability: Capability, projectId: string | 'all'): boolean {
  if (!hasCapability(who, capability)) return false;
  const granted = grantedProjects(who);
  if (granted === undefined) return true;
  return projectId !== 'all' && granted.includes(projectId);
}

/** Throws FORBIDDEN unless the caller has `capability` on `projectId` ('all': on every project). */
export function requireAccess(who: Principal, capability: Capability, projectId: string | 'all', action: string): void {
  if (can(who, capability, projectId)) return;
  if (who.kind === 'project') {
    throw ApiError.forbidden(
      capability === 'read'
        ? `this API key can only read its own project; project ${projectId} is not visible to it`
        : `${action} needs the ADMIN_TOKEN or a person's role; a project API key can only read its own project`,
    );
  }
  const scope = projectId === 'all' ? 'on every project' : `on project ${projectId}`;
  throw ApiError.forbidden(`${action}: your role does not allow it ${scope} (needs ${capability})`);
}

/**
 * The projects a list read covers: what was asked for when every one is in the caller's grant
 * (refused otherwise), or the whole grant when nothing was asked (undefined: every project).
 */
export function scopeProjects(
  who: Principal,
  projectIds: string[] | undefined,
  capability: Capability = 'read',
): string[] | undefined {
  if (!hasCapability(who, capability)) requireAccess(who, capability, 'all', 'this read');
  const granted = grantedProjects(who);
  if (granted === undefined) return projectIds;
  const outside = projectIds?.find((id) => !granted.includes(id));
  if (outside !== undefined) {
    throw ApiError.forbidden(
      who.kind === 'project'
        ? 'projectIds: this API key can only read its own project'
        : `projectIds: project ${outside} is not one of yours`,
    );
  }
  return projectIds ?? granted;
}

/**
 * For a thing named by id (a budget, a task, a key, an endpoint): `projectId` is its project, or
 * undefined when it does not exist. Refused the same way whether it exists in another project or
 * not at all, unless the caller sees every project (then "not found" tells nothing new).
 */
export function requireOnTarget(
  who: Principal,
  capability: Capability,
  projectId: string | null | undefined,
  what: string,
  action: string,
): void {
  if (projectId === undefined) {
    if (coversAll(who) && hasCapability(who, capability)) throw ApiError.notFound(`${what} not found`);
    throw ApiError.forbidden(`${action}: ${what} is not in a project you may change`);
  }
  if (can(who, capability, projectId ?? 'all')) return;
  if (!hasCapability(who, capability) || who.kind === 'project')
    requireAccess(who, capability, projectId ?? 'all', action);
  throw ApiError.forbidden(`${action}: ${what} is not in a project you may change`);
}
