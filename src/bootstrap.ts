/**
 * Starts a gateway: configuration, the database (embedded unless DATABASE_URL), migrations, the
 * sandbox simulator when no UPSTREAM_BASE_URL, the Nest application, the poller. Used by
 * `npm start` and by the tests (which start real gateways on real PostgreSQL).
 */
import { randomBytes } from 'node:crypto';
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule } from './app.module.js';
import { fromFastifyError } from './common/api-error.js';
import { ErrorFilter } from './common/error.filter.js';
import { loadConfig, type Config } from './config/config.js';
import { Database } from './database/database.js';
import { startEmbeddedPostgres, type EmbeddedDatabase } from './database/embedded.js';
import { migrate } from './database/migrate.js';
import { MetricsService } from './health/metrics.service.js';
import { LedgerService } from './ledger/ledger.service.js';
import { PriceBookService } from './pricing/price-book.service.js';
import { createSimulator, type Simulator } from './simulator/simulator.js';
import { PollerService } from './tasks/poller.service.js';

/**
 * Fastify's error handler sees only what fails before a Nest handler runs (body parsing, limits):
 * Nest's own exception layer catches the rest. Nest would install a handler there as well as
 * spendgate's (in startGateway), and Fastify warns about two handlers in one scope at every start
 * (FSTWRN004). Declining Nest's leaves one handler and no warning; the refusals are the same
 * (compared for bad, empty and oversized JSON bodies and a wrong content type).
 */
class GatewayFastifyAdapter extends FastifyAdapter {
  override setErrorHandler(): ReturnType<FastifyAdapter['setErrorHandler']> {
    return this.getInstance();
  }
}

export interface Gateway {
  app: NestFastifyApplication;
  url: string;
  config: Config;
  db: Database;
  databaseUrl: string;
  simulator?: Simulator;
  simulatorUrl?: string;
  close(): Promise<void>;
}

export async function startGateway(env: NodeJS.ProcessEnv = process.env, log: (line: string) => void = () => {}): Promise<Gateway> {
  const config = loadConfig(env);
  let embedded: EmbeddedDatabase | undefined;
  let databaseUrl = config.DATABASE_URL;
  if (!databaseUrl) {
    embedded = await startEmbeddedPostgres({ dataDir: config.DATA_DIR });
    databaseUrl = embedded.url;
    log(`embedded PostgreSQL ${embedded.owned ? 'started' : 'found running'} with data under ${config.DATA_DIR}`);
  }
  for (const name of await migrate(databaseUrl)) log(`applied migration ${name}`);

  let simulator: Simulator | undefined;
  let upstreamBase = config.UPSTREAM_BASE_URL;
  let upstreamKey = config.UPSTREAM_API_KEY ?? '';
  if (config.sandbox) {
    upstreamKey = `sim_${randomBytes(12).toString('hex')}`;
    simulator = createSimulator({ delayMs: config.SIMULATOR_DELAY_MS, apiKey: upstreamKey });
    upstreamBase = await simulator.app.listen({ port: 0, host: '127.0.0.1' });
  }

  const db = new Database(databaseUrl, config.DB_POOL_SIZE);
  const reportsDb = config.REPORTS_DATABASE_URL ? new Database(config.REPORTS_DATABASE_URL, config.DB_POOL_SIZE, { readOnly: true }) : db;
  const adapter = new GatewayFastifyAdapter({
    bodyLimit: config.BODY_LIMIT_BYTES,
    logger:
      config.LOG_LEVEL === 'silent'
        ? false
        : { level: config.LOG_LEVEL, redact: { paths: ['req.headers.authorization', 'req.headers["idempotency-key"]'], censor: '[redacted]' } },
    genReqId: requestIds(),
  });
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.forRoot({
      config,
      db,
      reportsDb,
      upstream: { baseUrl: upstreamBase!, apiKey: upstreamKey, connectTimeoutMs: config.UPSTREAM_CONNECT_TIMEOUT_MS, timeoutMs: config.UPSTREAM_TIMEOUT_MS },
    }),
    adapter,
    { logger: config.LOG_LEVEL === 'silent' ? false : ['error', 'warn'] },
  );
  app.useGlobalFilters(new ErrorFilter());
  const fastify = app.getHttpAdapter().getInstance();
  // Body-parsing errors (bad JSON, too large, wrong type) happen before Nest sees the request and
  // would get Fastify's own shape: this handler gives them the one refusal shape.
  fastify.setErrorHandler((error, _request, reply) => {
    const mapped = fromFastifyError(error as { code?: string; statusCode?: number; message?: string });
    const status = mapped?.status ?? 500;
    void reply.code(status).send(mapped?.toBody() ?? { code: 5000, message: 'internal error' });
  });
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
    metrics.requests.observe({ method: request.method, route, status: String(reply.statusCode) }, reply.elapsedTime / 1000);
  });

  await app.get(PriceBookService).init();
  const poller = app.get(PollerService);
  await app.get(LedgerService).sweepAbandoned(poller.abandonAfterMs);
  await app.init();
  await app.listen(config.PORT, config.HOST);
  const address = fastify.server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const url = `http://${config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST}:${port}`;
  poller.start();

  let closed = false;
  return {
    app,
    url,
    config,
    db,
    databaseUrl,
    simulator,
    simulatorUrl: upstreamBase,
    async close() {
      if (closed) return;
      closed = true;
      shuttingDown = true;
      await poller.stop(); // stop claiming work first
      const idle = setInterval(() => fastify.server.closeIdleConnections(), 100);
      try {
        await app.close(); // stops accepting, waits for in-flight requests
      } finally {
        clearInterval(idle);
      }
      await db.close();
      if (reportsDb !== db) await reportsDb.close();
      await simulator?.app.close();
      await embedded?.stop();
    },
  };
}

/**
 * Request ids for log lines: 16 hex digits, a random per-process prefix and a counter, so ids
 * of several instances do not collide in practice, without a call into the system's random source
 * on every request (that call was 2 % of the gateway's CPU under load).
 */
function requestIds(): () => string {
  const instance = randomBytes(4).toString('hex');
  let seq = 0;
  return () => {
    seq = (seq + 1) >>> 0;
    return instance + seq.toString(16).padStart(8, '0');
  };
}
