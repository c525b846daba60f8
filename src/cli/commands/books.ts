/**
 * `spendgate month close YYYY-MM` (audited as the CLI; `--through YYYY-MM` closes every open month up
 * to it, in order), `spendgate ledger seal` (seal what can be
 * sealed now, as the gateway does in the background), `spendgate ledger head` (the newest seal, to
 * keep elsewhere) and `spendgate ledger verify [--head HASH]` (exit 1 naming the first entry
 * edited, deleted or inserted after sealing or after its month's close, or a kept head no longer
 * in the chain).
 */
import { parseArgs } from 'node:util';
import { AuditService } from '../../audit/audit.service.js';
import { ChangesService } from '../../audit/changes.service.js';
import { MonthCloseService } from '../../closing/month-close.service.js';
import { CommitmentsService } from '../../commitments/commitments.service.js';
import { LedgerSealer } from '../../ledger/ledger-sealer.js';
import { ledgerHead, verifyLedger } from '../../closing/ledger-verify.js';
import { cliActor, UsageError, withDatabase } from '../cli-support.js';
import { loadConfig } from '../../config/config.js';
import { archivedEntriesLoader } from '../../history/archived-entries.js';

export async function monthClose(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { through: { type: 'string' } } });
  if (values.through === undefined ? positionals.length !== 1 : positionals.length !== 0)
    throw new UsageError('month close YYYY-MM  |  month close --through YYYY-MM');
  const closes = await withDatabase((db) => {
    const { actor, client } = cliActor();
    const service = new MonthCloseService(db, new ChangesService(db, new AuditService(db)), new CommitmentsService(db));
    const who = (actor as { label: string }).label;
    return values.through === undefined
      ? service.close(positionals[0]!, actor, client, who).then((c) => [c])
      : service.closeThrough(values.through, actor, client, who);
  });
  // Months with nothing in them (hundreds, after an entry of 1970) are counted, not listed.
  const quiet = closes.filter((c) => c.statements === 0 && c.carriedTasks === 0);
  for (const close of closes) {
    if (close.statements || close.carriedTasks || closes.length === 1) {
      process.stdout.write(
        `closed ${close.month}: ${close.statements} statement(s), ${close.carriedTasks} open hold(s) carried to the next month\n`,
      );
    }
  }
  if (quiet.length && closes.length > 1)
    process.stdout.write(
      `closed ${quiet.length} month(s) with no activity, ${quiet[0]!.month} to ${quiet.at(-1)!.month}\n`,
    );
  if (closes.length === 0)
    process.stdout.write(`month close: every month through ${values.through} is already closed\n`);
  return 0;
}

export async function ledgerSeal(): Promise<number> {
  const sealed = await withDatabase((db) => new LedgerSealer(db).sealAll());
  process.stdout.write(`ledger seal: ${sealed} entries sealed\n`);
  return 0;
}

export async function ledgerVerify(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { head: { type: 'string' } } });
  if (values.head !== undefined && !/^[0-9a-f]{64}$/i.test(values.head))
    throw new UsageError('ledger verify [--head HASH]: HASH is the 64 hex digits `spendgate ledger head` printed');
  const archiveDir = loadConfig(process.env).ARCHIVE_DIR;
  const result = await withDatabase((db) =>
    verifyLedger(
      db,
      values.head ? Buffer.from(values.head, 'hex') : undefined,
      archiveDir ? archivedEntriesLoader(archiveDir) : undefined,
    ),
  );
  if (result.problems.length) {
    for (const problem of result.problems) process.stdout.write(`ledger verify: FAILED: ${problem}\n`);
    return 1;
  }
  process.stdout.write(
    `ledger verify: ${result.sealedEntries} entries in ${result.seals} seals unchanged; ${result.statements} closed-month statements match the ledger; ${result.unsealedEntries} newer entries not sealed yet` +
      `${result.head ? `; head ${result.head.seq} ${result.head.hash}` : ''}${values.head ? '; the kept head is in the chain' : ' (no kept head given: deleted or recomputed newest seals cannot be seen; see docs/closing.md)'}\n`,
  );
  return 0;
}

export async function ledgerHeadCommand(): Promise<number> {
  const head = await withDatabase((db) => ledgerHead(db));
  process.stdout.write(
    head ? `${head.seq} ${head.hash}\n` : 'the ledger has no seal yet: run `spendgate ledger seal` first\n',
  );
  return 0;
}
