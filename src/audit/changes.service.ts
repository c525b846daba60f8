/**
 * A change a caller makes, with its audit record, in one transaction (decisions §12): `run`
 * opens the transaction every query of the change joins (Database.inTransaction), runs it, then
 * appends the record describing it. A change that fails leaves neither; caches hear of a change
 * only after it committed (Database.afterCommit).
 */
import { Injectable } from '@nestjs/common';
import type { ClientInfo } from '../auth/sessions.service.js';
import { Database, DATABASE } from '../database/database.js';
import { Inject } from '@nestjs/common';
import type { Actor, AuditEntry } from '../auth/audit-sink.js';
import { AuditService } from './audit.service.js';

@Injectable()
export class ChangesService {
  constructor(
    @Inject(DATABASE) private readonly db: Database,
    private readonly audit: AuditService,
  ) {}

  /** `describe` says what was changed, from the change's result (an id it created, the state after). */
  async run<T>(
    actor: Actor,
    client: ClientInfo,
    describe: AuditEntry | ((result: T) => AuditEntry | Promise<AuditEntry>),
    change: () => Promise<T>,
  ): Promise<T> {
    return this.db.inTransaction(async () => {
      const result = await change();
      const entry = typeof describe === 'function' ? await describe(result) : describe;
      await this.audit.record(actor, entry, client);
      return result;
    });
  }

  /** An audited event that changes nothing else (a sign-in, a failed one). */
  async note(actor: Actor, client: ClientInfo, entry: AuditEntry): Promise<void> {
    await this.audit.record(actor, entry, client);
  }
}
