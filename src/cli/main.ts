#!/usr/bin/env node
/**
 * The `spendgate` command line. Reads the same environment as the gateway; with no DATABASE_URL
 * it uses the embedded PostgreSQL under DATA_DIR (the running gateway's, or its own).
 */
import { parseArgs } from 'node:util';
import { ApiError } from '../common/api-error.js';
import { ConfigError } from '../config/config.js';
import { createSimulator } from '../simulator/simulator.js';
import { UsageError, withDatabase } from './cli-support.js';
import { archive } from './commands/archive.js';
import { auditHead, auditVerify } from './commands/audit.js';
import { ledgerHeadCommand, ledgerSeal, ledgerVerify, monthClose } from './commands/books.js';
import { simulatedStatement, vendorImport } from './commands/vendor.js';
import { tokenCreate, userInvite } from './commands/people.js';
import { keyCreate, projectCreate } from './commands/projects.js';
import { reconcileCommand, report } from './commands/reports.js';

const USAGE = `usage: spendgate <command>
  migrate
  project create <name>
  key create --project <name-or-id> [--tags name=value,...] [--name N] [--expires DATE]
  user invite --email E --role owner|finance|lead|viewer [--projects a,b]
  token create --name N (--email PERSON | --service SERVICE_ACCOUNT) [--expires DATE]
  audit verify [--head HASH]
  audit head
  month close YYYY-MM | --through YYYY-MM
  ledger verify [--head HASH]
  ledger head
  ledger seal
  archive YYYY-MM | archive restore YYYY-MM | archive list
  vendor import FILE [--mapping JSON]
  simulate --statement FROM TO [--discrepancies]
  simulate [--port N] [--host H] [--delay-ms N]
  reconcile
  report --from <date> --to <date> [--group-by project,model,day|apiKey|user|tag:<name>] [--unit USD|CREDITS]
         [--order-by keys|amount] [--first N] [--format csv|json|focus]`;

/** The commands, by their one or two words. */
const COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  migrate: async () => {
    await withDatabase(async () => {});
    process.stderr.write('migrations applied\n');
    return 0;
  },
  'project create': projectCreate,
  'key create': keyCreate,
  'user invite': userInvite,
  'token create': tokenCreate,
  'audit verify': auditVerify,
  'audit head': auditHead,
  'month close': monthClose,
  'ledger verify': ledgerVerify,
  'ledger head': ledgerHeadCommand,
  'ledger seal': ledgerSeal,
  archive,
  'vendor import': vendorImport,
  reconcile: reconcileCommand,
  report,
  simulate,
};

async function main(argv: string[]): Promise<number> {
  const [command, sub, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return command === undefined ? 2 : 0;
  }
  const two = COMMANDS[`${command} ${sub ?? ''}`];
  if (two) return two(rest);
  const one = COMMANDS[command];
  if (one) return one(argv.slice(1));
  throw new UsageError(`unknown command "${command}${sub && !sub.startsWith('-') ? ` ${sub}` : ''}"`);
}

async function simulate(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'delay-ms': { type: 'string' },
      statement: { type: 'boolean' },
      discrepancies: { type: 'boolean' },
    },
  });
  if (values.statement)
    return simulatedStatement(positionals[0] ?? '', positionals[1] ?? '', values.discrepancies ?? false);
  const sim = createSimulator({ delayMs: Number(values['delay-ms'] ?? 3000) });
  const url = await sim.app.listen({ port: Number(values.port ?? 8090), host: values.host ?? '127.0.0.1' });
  process.stderr.write(`upstream simulator listening on ${url} (any API key; control endpoints under /__sim)\n`);
  await new Promise(() => {});
  return 0;
}

/** node:util parseArgs' refusals (an unknown option, a missing value): a wrong use, like UsageError. */
function isArgumentError(error: unknown): error is Error {
  return error instanceof Error && String((error as NodeJS.ErrnoException).code).startsWith('ERR_PARSE_ARGS_');
}

// Out before exit: to a pipe, stdout is written asynchronously, and process.exit would cut it off.
const exit = (code: number) => process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));

main(process.argv.slice(2)).then(
  (code) => exit(code),
  (error: unknown) => {
    if (error instanceof UsageError || isArgumentError(error))
      process.stderr.write(`spendgate: ${error.message}\n${USAGE}\n`);
    else if (error instanceof ConfigError || error instanceof ApiError)
      process.stderr.write(`spendgate: ${error.message}\n`);
    else process.stderr.write(`spendgate: ${(error as Error).stack ?? String(error)}\n`);
    exit(error instanceof UsageError || isArgumentError(error) ? 2 : 1);
  },
);
