/**
 * The reads worker: a thread of the gateway's process with its own event loop, serving GraphQL
 * and CSV reports on a loopback port that only the main thread calls (reads-thread.ts).
 *
 * Why a thread: a read's work (hydrating, executing and serializing a page of tasks) runs on the
 * event loop it is given. On the main thread, eight readers took another project's submission
 * p50 from 6 ms to 275 ms (one at a time: 31 ms); on their own event loop the same load left it
 * at 7-9 ms (bench/FINDINGS.md, "Reads beside submissions"). Its own pools (few connections,
 * read-only, statement timeout) and turns (ReadGate) bound what reads take from the database.
 */
import 'reflect-metadata';
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';

/** How much lower than the submission path reads run (nice, 0 to 19). */
const READS_NICE = 19;
import { ApiError } from '../common/api-error.js';
import { CacheEvents } from '../common/cache-events.js';
import { ReadGate } from '../common/read-gate.js';
import { loadConfig } from '../config/config.js';
import { Database } from '../database/database.js';
import { createNestApp } from '../http/nest-app.js';
import { PriceBookService } from '../pricing/price-book.service.js';
import { ReadsAppModule } from './reads-app.module.js';
import type { ReadsWorkerData } from './reads-thread.js';
import { warmUp } from './warm-up.js';
import { protectCookieRequests } from '../auth/session-cookies.js';
import { answerDirectlyHooks } from '../graphql/answered-directly.js';
import { reportCacheHooks } from '../report-cache/graphql-answers.js';
import { postLargeAnswers } from './posted-answers.js';
import { STATEMENT_IMPORT, STATEMENT_IMPORT_CHECK } from '../vendor-statements/statement-spool.js';

const data = workerData as ReadsWorkerData;
const config = { ...loadConfig(data.env), ADMIN_TOKEN: data.adminToken };
const readPool = { readOnly: true, statementTimeoutMs: config.READ_STATEMENT_TIMEOUT_MS, nice: READS_NICE };
// The read pools, and a few read-write connections for the admin mutations (budgets, prices, projects).
const db = new Database(data.databaseUrl, Math.min(4, config.DB_POOL_SIZE), { applicationName: 'spendgate-admin' });
const readsDb = new Database(data.databaseUrl, config.READ_POOL_SIZE, {
  ...readPool,
  applicationName: 'spendgate-reads',
});
const reportsDb = new Database(config.REPORTS_DATABASE_URL ?? data.databaseUrl, config.READ_POOL_SIZE, {
  ...readPool,
  applicationName: 'spendgate-reports',
});

try {
  const app = await createNestApp(
    ReadsAppModule.forRoot({ config, db, readsDb, reportsDb, upstream: data.upstream }),
    config,
  );
  const fastify = app.getHttpAdapter().getInstance();
  // The console's session cookie and its CSRF proof (auth/session-cookies.ts), before any route runs.
  await protectCookieRequests(fastify, config);
  // Cached report answers' extensions, ETag and 304 (report-cache/graphql-answers.ts), before the hooks that put
  // answers a resolver wrote itself (spendReport) where GraphQL left their place (graphql/answered-directly.ts).
  reportCacheHooks(fastify);
  answerDirectlyHooks(fastify);
  // Large written answers go to the main thread as memory, not through the loopback socket.
  postLargeAnswers(fastify, parentPort!);
  // Reads take turns: at most READ_CONCURRENCY at once, the rest wait (then 503).
  const gate = new ReadGate(config.READ_CONCURRENCY, config.READ_STATEMENT_TIMEOUT_MS);
  // A vendor statement arrives as a stream (the main thread forwards it as it comes), parsed by its import.
  fastify.addContentTypeParser(['text/csv', 'application/octet-stream'], (_request, payload, done) =>
    done(null, payload),
  );
  fastify.addHook('onRequest', async (request, reply) => {
    // An import is not a read: it takes no read turn (it has its own, one at a time: reconciliation.service.ts),
    // nor does the main thread's question whether the caller may import (statement-spool.ts).
    if (
      request.url === '/__reads/ready' ||
      (request.method === 'POST' &&
        (request.url.startsWith(STATEMENT_IMPORT) || request.url.startsWith(STATEMENT_IMPORT_CHECK)))
    )
      return;
    const release = await gate.enter();
    if (!release)
      return reply
        .code(503)
        .send(ApiError.serviceUnavailable('this instance is busy with other reads; retry shortly').toBody());
    reply.raw.once('close', release);
  });
  fastify.get('/__reads/ready', async () => ({ status: 'ok' }));
  await app.get(PriceBookService).init();
  await app.init();
  await app.listen(0, '127.0.0.1');
  if (config.ADMIN_TOKEN) await warmUp(fastify, config.ADMIN_TOKEN);
  // Only once it is ready: starting (Nest, the schema, the warm-up) at the lowest priority took 47 s
  // on a loaded machine, and a gateway serves nothing until its reads thread is up.
  lowerThisThreadsPriority();
  const address = fastify.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  parentPort!.postMessage({ type: 'listening', url: `http://127.0.0.1:${port}` });

  // Admin mutations here change what the main thread caches: it is told before they answer.
  let nextId = 0;
  const acks = new Map<number, () => void>();
  app.get(CacheEvents).relayTo(
    (event) =>
      new Promise<void>((resolve) => {
        const id = ++nextId;
        const timer = setTimeout(() => acks.delete(id) && resolve(), 5_000); // never hang a mutation on it
        acks.set(id, () => {
          clearTimeout(timer);
          acks.delete(id);
          resolve();
        });
        parentPort!.postMessage({ type: 'cache', id, event });
      }),
  );

  parentPort!.on('message', (message: unknown) => {
    const m = message as { type?: string; id?: number };
    if (m?.type === 'cache-ack') return acks.get(m.id!)?.();
    if (message !== 'close') return;
    const idle = setInterval(() => fastify.server.closeIdleConnections(), 100);
    void app
      .close()
      .finally(() => clearInterval(idle))
      .then(() => Promise.all([db.close(), readsDb.close(), reportsDb.close()]))
      .finally(() => process.exit(0));
  });
} catch (error) {
  parentPort!.postMessage({ type: 'failed', error: (error as Error).stack ?? String(error) });
  await Promise.all([db.close(), readsDb.close(), reportsDb.close()]);
  process.exit(1);
}

/**
 * The reads thread yields the CPU to the submission path: on Linux a thread has its own nice value
 * (setpriority on its thread id), so under load the scheduler runs the main thread first. Where
 * the thread id cannot be found, nothing changes.
 */
function lowerThisThreadsPriority(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, READS_NICE);
  } catch {
    // not Linux, or not allowed: reads keep the process's priority
  }
}
