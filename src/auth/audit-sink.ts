/**
 * Where auth writes what it must audit (a failed sign-in, a read with the ADMIN_TOKEN: decisions
 * §11, §12) without leaning on the audit trail's room, which stands on auth: audit/audit.service.ts
 * implements it, core/core.module.ts binds it to AUDIT_SINK.
 */
import { actorOf, type Principal } from './access.js';
import type { ClientInfo } from './sessions.service.js';

export const AUDIT_SINK = Symbol('AUDIT_SINK');

export interface AuditEntry {
  action: string;
  targetKind?: string | null;
  targetId?: string | null;
  projectId?: string | null;
  before?: unknown;
  after?: unknown;
}

/** Who did it, from where: the caller, or a named actor (the CLI, a failed sign-in by someone unknown). */
export type Actor = Principal | { kind: 'named'; actorKind: string; id: string | null; label: string };

/** How the audit trail names an actor: a caller as actorOf names it, a named actor by its own name. */
export function actorNamed(actor: Actor): { kind: string; id: string | null; label: string } {
  return actor.kind === 'named' ? { kind: actor.actorKind, id: actor.id, label: actor.label } : actorOf(actor);
}

export interface AuditSink {
  /** Appends one record, in the transaction of the async context if there is one. */
  record(actor: Actor, entry: AuditEntry, client: ClientInfo): Promise<void>;
}
