/**
 * budget.exhausted (decisions §8): the first refusal by a hard budget in its period. The hold's
 * transaction decides the refusal and writes nothing (a refusal leaves no row); this writes the
 * event right after, through spendgate_budget_exhausted, whose cause key makes it once per
 * budget, period and subject across instances. If this process dies between the two, the next
 * refusal of the same budget writes it: a budget that refuses keeps refusing. Each instance
 * remembers what it wrote for a minute, so a burst of refusals costs one statement, not one each.
 */
import { Inject, Injectable, Logger } from '@nestjs/common';
import { DATABASE, type Database } from '../database/database.js';

const REMEMBER_MS = 60_000;

@Injectable()
export class ExhaustionEvents {
  private readonly logger = new Logger('Alerts');
  private readonly written = new Map<string, number>();

  constructor(@Inject(DATABASE) private readonly db: Database) {}

  /** Records the refusal's event unless this instance did so in the last minute; never throws. */
  record(budgetId: string, subject: string): void {
    const key = `${budgetId}:${subject}`;
    const now = Date.now();
    if ((this.written.get(key) ?? 0) > now - REMEMBER_MS) return;
    this.written.set(key, now);
    if (this.written.size > 10_000) this.written.clear();
    this.db.query('SELECT spendgate_budget_exhausted($1::uuid, $2)', [budgetId, subject]).catch((error) => {
      this.written.delete(key); // the next refusal tries again
      this.logger.warn(`budget.exhausted for ${budgetId} not recorded yet: ${(error as Error).message}`);
    });
  }
}
