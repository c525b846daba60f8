/**
 * The declared look-ups of `target`-scoped rules (permissions.ts): for a kind of thing a field
 * names by id (a task, a budget, a limit, an API key, a webhook endpoint, a delivery), the project it
 * belongs to. The room that owns the rows registers its look-up when it starts; the GraphQL guard
 * asks here before any resolver runs, so the permission table decides for targets too.
 *
 * A look-up answers the project's id, null for a thing of no project (an endpoint for every
 * project), or undefined when there is no such thing; it may refuse a malformed id (a 400).
 */
import { Injectable } from '@nestjs/common';

export type TargetKind = 'task' | 'budget' | 'limit' | 'api-key' | 'webhook-endpoint' | 'webhook-delivery';

/** How a refusal names the thing (clipped: the id is the caller's text). */
export function targetName(kind: TargetKind, id: string): string {
  const names: Record<TargetKind, string> = {
    task: 'task',
    budget: 'budget',
    limit: 'limit',
    'api-key': 'API key',
    'webhook-endpoint': 'webhook endpoint',
    'webhook-delivery': 'delivery',
  };
  return `${names[kind]} ${id.slice(0, 40)}`;
}

export type TargetLookup = (id: string) => Promise<string | null | undefined>;

@Injectable()
export class TargetLookups {
  private readonly lookups = new Map<TargetKind, TargetLookup>();

  register(kind: TargetKind, lookup: TargetLookup): void {
    this.lookups.set(kind, lookup);
  }

  /** The project of the `kind` named `id`. A kind nobody registered is a wiring defect: it throws. */
  projectOf(kind: TargetKind, id: string): Promise<string | null | undefined> {
    const lookup = this.lookups.get(kind);
    if (!lookup)
      throw new Error(`no look-up is registered for ${kind}: its room must register one (auth/target-lookups.ts)`);
    return lookup(id);
  }

  registered(): TargetKind[] {
    return [...this.lookups.keys()];
  }
}
