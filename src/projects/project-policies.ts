/** Per-project policies, read on the submission path; remembered for a few seconds. */
import { Inject, Injectable } from '@nestjs/common';
import { CacheEvents } from '../common/cache-events.js';
import { Database, DATABASE } from '../database/database.js';
import { dec, type Decimal } from '../pricing/money.js';

const TTL_MS = 5_000;

export interface SubmissionPolicies {
  unpriced: 'block' | 'allow';
  /** Chat holds are the estimate × this (decisions §6); 1 unless the project asked for headroom. */
  chatHoldMultiplier: Decimal;
}

const DEFAULTS: SubmissionPolicies = { unpriced: 'block', chatHoldMultiplier: dec(1) };

@Injectable()
export class ProjectPolicies {
  private readonly cache = new Map<string, { policies: SubmissionPolicies; until: number }>();

  constructor(
    @Inject(DATABASE) private readonly db: Database,
    events: CacheEvents,
  ) {
    events.on((e) => {
      if (e.kind === 'project-policies') this.cache.delete(e.projectId);
    });
  }

  async of(projectId: string): Promise<SubmissionPolicies> {
    const hit = this.cache.get(projectId);
    if (hit && hit.until > Date.now()) return hit.policies;
    const { rows } = await this.db.query<{ unpriced_policy: 'block' | 'allow'; chat_hold_multiplier: string }>(
      'SELECT unpriced_policy, chat_hold_multiplier::text FROM project WHERE id = $1',
      [projectId],
    );
    const row = rows[0];
    const policies = row
      ? { unpriced: row.unpriced_policy, chatHoldMultiplier: dec(row.chat_hold_multiplier) }
      : DEFAULTS;
    this.cache.set(projectId, { policies, until: Date.now() + TTL_MS });
    return policies;
  }
}
