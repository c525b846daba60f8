/**
 * `spendgate audit verify [--head HASH]` recomputes the audit trail's chain and names the first
 * record that was edited, deleted, inserted or moved (exit 1); `spendgate audit head` prints the
 * last record's seq and hash, to keep elsewhere and give to a later verify.
 */
import { parseArgs } from 'node:util';
import { verifyChain } from '../../audit/audit-chain.js';
import { AuditService } from '../../audit/audit.service.js';
import { UsageError, withDatabase } from '../cli-support.js';

export async function auditVerify(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { head: { type: 'string' } } });
  if (values.head !== undefined && !/^[0-9a-f]{64}$/i.test(values.head))
    throw new UsageError('audit verify [--head HASH]: HASH is the 64 hex digits `spendgate audit head` printed');
  const result = await withDatabase((db) =>
    verifyChain(new AuditService(db).all(), values.head ? Buffer.from(values.head, 'hex') : undefined),
  );
  if (result.problem) {
    process.stdout.write(
      `audit verify: FAILED at record ${result.problem.seq}: ${result.problem.problem} (${result.checked} records before it chain)\n`,
    );
    return 1;
  }
  process.stdout.write(
    `audit verify: ${result.checked} records chain${result.head ? `; head ${result.head.seq} ${result.head.hash.toString('hex')}` : ''}\n`,
  );
  return 0;
}

export async function auditHead(): Promise<number> {
  const head = await withDatabase((db) => new AuditService(db).head());
  process.stdout.write(head ? `${head.seq} ${head.hash}\n` : 'the audit trail is empty\n');
  return 0;
}
