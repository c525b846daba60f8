/**
 * `spendgate month close YYYY-MM` (audited as the CLI), `spendgate ledger seal` (seal what can be
 * sealed now, as the gateway does in the background) and `spendgate ledger verify` (exit 1 naming
 * the first entry edited, deleted or inserted after sealing or after its month's close).
 */
import { AuditService } from '../../audit/audit.service.js';
import { ChangesService } from '../../audit/changes.service.js';
import { MonthCloseService } from '../../closing/month-close.service.js';
import { LedgerSealer } from '../../ledger/ledger-sealer.js';
import { verifyLedger } from '../../ledger/ledger-verify.js';
import { cliActor, UsageError, withDatabase } from '../cli-support.js';

export async function monthClose(args: string[]): Promise<number> {
  const [month] = args;
  if (!month || args.length !== 1) throw new UsageError('month close YYYY-MM');
  const close = await withDatabase((db) => {
    const { actor, client } = cliActor();
    return new MonthCloseService(db, new ChangesService(db, new AuditService(db))).close(month, actor, client, (actor as { label: string }).label);
  });
  process.stdout.write(`closed ${close.month}: ${close.statements} statement(s), ${close.carriedTasks} open hold(s) carried to the next month\n`);
  return 0;
}

export async function ledgerSeal(): Promise<number> {
  const sealed = await withDatabase((db) => new LedgerSealer(db).sealAll());
  process.stdout.write(`ledger seal: ${sealed} entries sealed\n`);
  return 0;
}

export async function ledgerVerify(): Promise<number> {
  const result = await withDatabase((db) => verifyLedger(db));
  if (result.problems.length) {
    for (const problem of result.problems) process.stdout.write(`ledger verify: FAILED: ${problem}\n`);
    return 1;
  }
  process.stdout.write(
    `ledger verify: ${result.sealedEntries} entries in ${result.seals} seals unchanged; ${result.statements} closed-month statements match the ledger; ${result.unsealedEntries} newer entries not sealed yet\n`,
  );
  return 0;
}
