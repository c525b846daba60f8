/** Per-project policies, read on the submission path; remembered for a few seconds. */
import { Inject, Injectable } from '@nestjs/common';
import { Database, DATABASE } from '../database/database.js';

const TTL_MS = 5_000;

@Injectable()
export class ProjectPolicies {
  private readonly cache = new Map<string, { unpriced: 'block' | 'allow'; until: number }>();

  constructor(@Inject(DATABASE) private readonly db: Database) {}

  async unpricedPolicy(projectId: string): Promise<'block' | 'allow'> {
    const hit = this.cache.get(projectId);
    if (hit && hit.until > Date.now()) return hit.unpriced;
    const { rows } = await this.db.query<{ unpriced_policy: 'block' | 'allow' }>('SELECT unpriced_policy FROM project WHERE id = $1', [projectId]);
    const unpriced = rows[0]?.unpriced_policy ?? 'block';
    this.cache.set(projectId, { unpriced, until: Date.now() + TTL_MS });
    return unpriced;
  }

  forget(projectId: string): void {
    this.cache.delete(projectId);
  }
}
