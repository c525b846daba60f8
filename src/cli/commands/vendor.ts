/**
 * `spendgate vendor import FILE [--mapping JSON]`: imports a vendor statement (streamed from the
 * file) and prints the reconciliation's summary. `spendgate simulate --statement FROM TO
 * [--discrepancies]`: the statement the sandbox's simulated vendor bills for those days, as CSV on
 * stdout (what the gateway settled, at the published rates); with --discrepancies, one task is left
 * out, one billed that never reached the gateway, and one billed at a different amount.
 */
import { open } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { ApiError } from '../../common/api-error.js';
import { csvLine } from '../../common/csv.js';
import { dec } from '../../pricing/money.js';
import { TaskReadsService } from '../../tasks/task-reads.service.js';
import type { ReconciliationService } from '../../vendor-statements/reconciliation.service.js';
import { mappingFromJson, type ColumnMapping } from '../../vendor-statements/statement-format.js';
import { UsageError, withDatabase } from '../cli-support.js';

export async function vendorImport(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { mapping: { type: 'string' } } });
  if (positionals.length !== 1) throw new UsageError('vendor import FILE [--mapping JSON]');
  let mapping: ColumnMapping[] | undefined;
  if (values.mapping !== undefined) {
    const read = mappingFromJson(values.mapping);
    if ('refusal' in read) throw new UsageError(`--${read.refusal}`);
    mapping = read.mapping;
  }
  await readableFile(positionals[0]!);
  // In a worker with a 24 MB young generation: V8 would otherwise let it grow to 3x64 MB on a large
  // machine, and a million-row import peaked near 300 MB instead of ~200 (bench:vendor-import).
  const worker = new Worker(new URL('./vendor-import.worker.js', import.meta.url), {
    workerData: { file: positionals[0], mapping },
    resourceLimits: { maxYoungGenerationSizeMb: 24 },
  });
  const answer = await new Promise<{
    result?: Awaited<ReturnType<ReconciliationService['import']>>;
    refused?: boolean;
    message?: string;
  }>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the import stopped (exit ${code})`)));
  });
  if (!answer.result) throw answer.refused ? new ApiError(400, 4000, answer.message!) : new Error(answer.message);
  const result = answer.result;
  const s = result.statement;
  process.stdout.write(`${s.id}\n`);
  process.stderr.write(
    `${result.created ? 'imported' : 'already imported'}: ${s.rows} rows${s.repeated ? ` (${s.repeated} already in an earlier statement)` : ''}\n`,
  );
  for (const c of s.summary.classes)
    process.stderr.write(
      `  ${c.class.padEnd(16)} ${String(c.count).padStart(8)}  theirs ${c.theirs} ${c.unit}, ours ${c.ours} ${c.unit}\n`,
    );
  return 0;
}

/** The statement's file is one this process can read (the worker would answer a stack trace otherwise). */
async function readableFile(file: string): Promise<void> {
  let problem: string | undefined;
  try {
    const handle = await open(file, 'r');
    try {
      if ((await handle.stat()).isDirectory()) problem = 'is a directory, not a file';
    } finally {
      await handle.close();
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    problem =
      code === 'ENOENT'
        ? 'does not exist'
        : code === 'EACCES'
          ? 'may not be read by this user'
          : `cannot be read (${code})`;
  }
  if (problem) throw new ApiError(400, 4000, `statement: ${JSON.stringify(file)} ${problem}`);
}

export async function simulatedStatement(from: string, to: string, discrepancies: boolean): Promise<number> {
  const start = new Date(`${from}T00:00:00Z`);
  const end = new Date(`${to}T00:00:00Z`);
  if (Number.isNaN(start.getTime()) || Number.isNaN(end.getTime()) || end <= start)
    throw new UsageError('simulate --statement FROM TO: two UTC days, e.g. 2026-11-01 2026-12-01');
  const rows = await withDatabase((db) => new TaskReadsService(db).billedBetween(start, end));
  const out = rows.map((r) => [r.id, r.model, r.at.toISOString(), r.amount, r.unit]);
  if (discrepancies && out.length >= 2) {
    out.splice(0, 1); // a task the vendor forgot to bill: ours, not billed
    const changed = out[0]!;
    changed[3] = dec(changed[3]!).plus('0.01').toFixed(); // billed a cent more
    out.push(['999999999', 'seedream-4.0', out[0]![2]!, '0.04', 'USD']); // billed, never ours
  }
  process.stdout.write(
    `${csvLine(['task_id', 'model', 'time', 'amount', 'unit'])}\n${out.map((r) => csvLine(r)).join('\n')}${out.length ? '\n' : ''}`,
  );
  return 0;
}
