#!/usr/bin/env node
/**
 * The `spendgate` command line. Reads the same environment as the gateway; with no DATABASE_URL
 * it uses the embedded PostgreSQL under DATA_DIR (the running gateway's, or its own).
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config/config.js';
import { Database } from '../database/database.js';
import type { EmbeddedDatabase } from '../database/embedded.js';
import { migrate } from '../database/migrate.js';
import { reconcile } from '../ledger/reconcile.js';
import { ProjectsService } from '../projects/projects.service.js';
import { dec } from '../pricing/money.js';
import { focusCsv } from '../reports/focus-export.js';
import { toCsv } from '../reports/spend-csv.js';
import { checkReportQuery, spendReport, type GroupKey, type ReportQuery } from '../reports/spend-report.js';
import { createSimulator } from '../simulator/simulator.js';
import { ApiError } from '../common/api-error.js';

const USAGE = `usage: spendgate <command>
  migrate
  project create <name>
  key create --project <name-or-id> [--tags name=value,...]
  simulate [--port N] [--host H] [--delay-ms N]
  reconcile
  report --from <date> --to <date> [--group-by project,model,day|apiKey|user|tag:<name>] [--unit USD|CREDITS]
         [--order-by keys|amount] [--first N] [--format csv|json|focus]`;

async function withDatabase<T>(fn: (db: Database) => Promise<T>): Promise<T> {
  const config = loadConfig(process.env);
  let embedded: EmbeddedDatabase | undefined;
  let url = config.DATABASE_URL;
  if (!url) {
    const { startEmbeddedPostgres } = await import('../database/embedded.js'); // not in a production image
    embedded = await startEmbeddedPostgres({ dataDir: config.DATA_DIR });
    url = embedded.url;
  }
  await migrate(url);
  const db = new Database(url, 2);
  try {
    return await fn(db);
  } finally {
    await db.close();
    await embedded?.stop();
  }
}

/** `report` reads REPORTS_DATABASE_URL when it is set (a replica: no migrations, read-only), else as above. */
async function withReportsDatabase<T>(fn: (db: Database) => Promise<T>): Promise<T> {
  const url = loadConfig(process.env).REPORTS_DATABASE_URL;
  if (!url) return withDatabase(fn);
  const db = new Database(url, 2, { readOnly: true });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

async function main(argv: string[]): Promise<number> {
  const [command, sub, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return command === undefined ? 2 : 0;
  }
  switch (`${command ?? ''} ${command === 'project' || command === 'key' ? (sub ?? '') : ''}`.trim()) {
    case 'migrate':
      await withDatabase(async () => {});
      process.stderr.write('migrations applied\n');
      return 0;
    case 'project create': {
      const name = rest.join(' ').trim();
      if (!name) throw new UsageError('project create <name>');
      const project = await withDatabase((db) => new ProjectsService(db).create(name));
      process.stdout.write(`${project.id}\n`);
      return 0;
    }
    case 'key create': {
      const { values } = parseArgs({ args: rest, options: { project: { type: 'string' }, tags: { type: 'string' } } });
      if (!values.project) throw new UsageError('key create --project <name-or-id> [--tags name=value,...]');
      const key = await withDatabase(async (db) => {
        const projects = new ProjectsService(db);
        const project = await projects.resolve(values.project!);
        // The key's default tags (decisions §7): every task it submits carries them.
        return projects.issueKey(project.id, values.tags ? values.tags.split(',') : []);
      });
      process.stdout.write(`${key}\n`);
      return 0;
    }
    case 'simulate': {
      const { values } = parseArgs({ args: argv.slice(1), options: { port: { type: 'string' }, host: { type: 'string' }, 'delay-ms': { type: 'string' } } });
      const sim = createSimulator({ delayMs: Number(values['delay-ms'] ?? 3000) });
      const url = await sim.app.listen({ port: Number(values.port ?? 8090), host: values.host ?? '127.0.0.1' });
      process.stderr.write(`upstream simulator listening on ${url} (any API key; control endpoints under /__sim)\n`);
      await new Promise(() => {});
      return 0;
    }
    case 'reconcile': {
      const differences = await withDatabase((db) => reconcile(db));
      if (differences.length === 0) {
        process.stdout.write('reconcile: clean — every balance equals the sum of its ledger entries\n');
        return 0;
      }
      for (const d of differences) process.stdout.write(`DIFFERENCE ${d.what}: stored ${d.stored}, ledger ${d.fromLedger}\n`);
      return 1;
    }
    case 'report': {
      const { values } = parseArgs({
        args: argv.slice(1),
        options: {
          from: { type: 'string' }, to: { type: 'string' }, 'group-by': { type: 'string' }, format: { type: 'string' },
          unit: { type: 'string' }, 'order-by': { type: 'string' }, first: { type: 'string' },
        },
      });
      const from = new Date(values.from ?? '');
      const to = new Date(values.to ?? '');
      if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime())) throw new UsageError('report --from <date> --to <date>');
      if (values.format === 'focus') {
        const config = loadConfig(process.env);
        const rate = config.CREDITS_PER_USD ? { creditsPerUsd: dec(config.CREDITS_PER_USD) } : {};
        process.stdout.write(await withReportsDatabase((db) => focusCsv(db, { from, to, vendorName: config.VENDOR_NAME, ...rate })));
        return 0;
      }
      const groupBy = (values['group-by'] ?? 'project,model,day').split(',').filter(Boolean) as GroupKey[];
      const query: ReportQuery = {
        from, to, groupBy,
        ...(values.unit ? { unit: values.unit as 'USD' | 'CREDITS' } : {}),
        ...(values['order-by'] ? { orderBy: values['order-by'] as 'keys' | 'amount' } : {}),
        ...(values.first ? { first: /^\d+$/.test(values.first) ? Number(values.first) : Number.NaN } : {}),
      };
      try {
        checkReportQuery(query);
      } catch (error) {
        throw new UsageError((error as Error).message.replace(/^(groupBy|orderBy|first|unit):/, (_, f: string) => `--${f === 'groupBy' ? 'group-by' : f === 'orderBy' ? 'order-by' : f}:`));
      }
      const rows = await withReportsDatabase((db) => spendReport(db, query));
      process.stdout.write(values.format === 'json' ? `${JSON.stringify(rows, null, 2)}\n` : toCsv(groupBy, rows));
      return 0;
    }
    default:
      throw new UsageError(command ? `unknown command "${command}${sub ? ` ${sub}` : ''}"` : 'no command');
  }
}

class UsageError extends Error {}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError) process.stderr.write(`spendgate: ${error.message}\n${USAGE}\n`);
    else if (error instanceof ConfigError || error instanceof ApiError) process.stderr.write(`spendgate: ${error.message}\n`);
    else process.stderr.write(`spendgate: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(error instanceof UsageError ? 2 : 1);
  },
);
