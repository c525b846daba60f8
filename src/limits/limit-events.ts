/**
 * limit.refused (decisions §20): the first refusal by a limit in its window, one event per subject
 * across instances (spendgate_limit_refused's cause key), capped for each-user limits as budget
 * exhaustion is. The hold's transaction refused and wrote nothing; this writes the event right
 * after. Each instance remembers what it wrote for the window, so a burst of refusals costs one
 * statement, not one each.
 */
import { Inject, Injectable, Logger } from '@nestjs/common';
import { DATABASE, type Database } from '../database/database.js';
import type { LimitRefusal } from '../ledger/holds.js';

@Injectable()
export class LimitEvents {
  private readonly logger = new Logger('Alerts');
  private readonly written = new Map<string, number>();

  constructor(@Inject(DATABASE) private readonly db: Database) {}

  /** Records the refusal's event unless this instance did so in its window; never throws. */
  record(r: LimitRefusal): void {
    const windowMs = r.kind === 'TASKS_IN_FLIGHT' ? 3_600_000 : 60_000;
    const window = Math.floor(Date.now() / windowMs);
    const key = `${r.limitId}:${r.subject}`;
    if (this.written.get(key) === window) return;
    this.written.set(key, window);
    if (this.written.size > 10_000) this.written.clear();
    this.db.query('SELECT spendgate_limit_refused($1::uuid, $2, $3)', [r.limitId, r.subject, r.used]).catch((error) => {
      this.written.delete(key); // the next refusal tries again
      this.logger.warn(`limit.refused for ${r.limitId} not recorded yet: ${(error as Error).message}`);
    });
  }
}
