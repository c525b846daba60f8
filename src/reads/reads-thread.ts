/**
 * The main thread's side of the reads worker (reads.worker.ts): starts it, forwards the read
 * paths to it (GraphQL, CSV reports), restarts it if it dies, and stops it last.
 * Forwarding costs the main thread a loopback hop and a copy of the bytes, not the read's work; a large
 * written answer is handed over as memory instead (posted-answers.ts).
 */
import { existsSync } from 'node:fs';
import { Readable } from 'node:stream';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import { Worker } from 'node:worker_threads';
import { Logger } from '@nestjs/common';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Pool, type Dispatcher } from 'undici';
import { ApiError } from '../common/api-error.js';
import type { CacheEvent } from '../common/cache-events.js';
import type { UpstreamOptions } from '../upstream/upstream.types.js';
import { POSTED_BODY, PostedBodies, type PostedBody } from './posted-answers.js';
import { SPOOLED_STATEMENT } from '../vendor-statements/statement-spool.js';
import { isStatementUpload, passStatement, type Relayed, type WorkerHop } from './statement-upload.js';

export interface ReadsWorkerData {
  /** The environment the gateway was started with (the worker reads the same configuration). */
  env: Record<string, string | undefined>;
  databaseUrl: string;
  adminToken: string | undefined;
  /** STATEMENT_SPOOL_DIR as configuration validated it (statement-spool.ts). */
  spoolDir: string | undefined;
  upstream: UpstreamOptions;
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'host',
  'content-length',
  'upgrade',
  'proxy-connection',
  'te',
  'trailer',
]);

export class ReadsThread {
  private readonly logger = new Logger('ReadsThread');
  private worker?: Worker;
  private pool?: Pool;
  private ready: Promise<void> = new Promise(() => {});
  private closing = false;
  private onCacheEvent: (event: CacheEvent) => Promise<void> = async () => {};
  private readonly posted = new PostedBodies();

  constructor(
    private readonly data: ReadsWorkerData,
    /** The worker's young generation per semi-space, MB (0: V8's default); see start(). */
    private readonly semiSpaceMb = 0,
  ) {}

  /** Where the worker's cache events go (the main thread's CacheEvents); each is acknowledged when applied. */
  cacheEventsTo(receive: (event: CacheEvent) => Promise<void>): void {
    this.onCacheEvent = receive;
  }

  /** Starts the worker; resolves once it serves (the gateway answers only then). */
  run(): Promise<void> {
    this.ready = this.start();
    return this.ready;
  }

  /** Registers the read paths on the main thread's Fastify: each is forwarded to the worker. */
  forward(fastify: FastifyInstance): void {
    // GraphQL over POST may be JSON (parsed by the main thread, sent on as JSON) or application/graphql (sent as it
    // is).
    fastify.addContentTypeParser('application/graphql', { parseAs: 'string' }, (_request, body, done) =>
      done(null, body),
    );
    // A vendor statement (text/csv) streams through to the worker as it arrives, never whole in memory here.
    fastify.addContentTypeParser(['text/csv', 'application/octet-stream'], (_request, payload, done) =>
      done(null, payload),
    );
    const handler = (request: FastifyRequest, reply: FastifyReply) => this.pass(request, reply);
    fastify.route({ method: ['GET', 'POST'], url: '/graphql', handler });
    fastify.route({ method: ['GET', 'POST'], url: '/reports/*', handler });
    // The books as Prometheus metrics (book-metrics/): a read of the database like any report.
    fastify.route({ method: 'GET', url: '/metrics/books', handler });
    // Sign-in and sign-out of the console (people/sign-in.controller.ts).
    fastify.route({ method: ['GET', 'POST'], url: '/auth/*', handler });
  }

  /** How many large answers the worker handed over as memory (posted-answers.ts). */
  get answersHandedOver(): number {
    return this.posted.handedOver;
  }

  async probe(): Promise<string> {
    try {
      await this.ready;
      const res = await this.pool!.request({ path: '/__reads/ready', method: 'GET' });
      await res.body.dump();
      return res.statusCode === 200 ? 'ok' : `unreachable: HTTP ${res.statusCode}`;
    } catch (error) {
      return `unreachable: ${(error as Error).message}`;
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    const worker = this.worker;
    if (!worker) return;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.postMessage('close');
    const force = setTimeout(() => void worker.terminate(), 10_000);
    await exited;
    clearTimeout(force);
    await this.pool?.close();
  }

  private async pass(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    await this.ready;
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    // Who the client is, for the audit trail and the failed sign-in limit: never what it says itself.
    headers['x-spendgate-client'] = request.ip;
    if (request.headers.host) headers['x-spendgate-host'] = request.headers.host;
    delete headers['x-spendgate-warm-up'];
    delete headers[SPOOLED_STATEMENT];
    if (isStatementUpload(request)) return passStatement(this.hop, request, reply, headers, this.data.spoolDir);
    const body =
      request.method === 'GET' || request.body === undefined || request.body === null
        ? undefined
        : typeof request.body === 'string' || request.body instanceof Readable
          ? request.body
          : JSON.stringify(request.body);
    return this.relay(reply, { path: request.url, method: request.method as 'GET' | 'POST', headers, body });
  }

  /** What a statement's upload (statement-upload.ts) does through this thread's connection to the worker. */
  private readonly hop: WorkerHop = {
    request: (options) => this.pool!.request(options),
    relay: (reply, options) => this.relay(reply, options),
    answer: (reply, res) => this.answer(reply, res),
    unavailable: (reply, error) => this.unavailable(reply, error),
  };

  private async relay(reply: FastifyReply, options: Relayed): Promise<FastifyReply> {
    let res: Dispatcher.ResponseData;
    try {
      res = await this.pool!.request(options);
    } catch (error) {
      return this.unavailable(reply, error as Error);
    }
    try {
      return await this.answer(reply, res);
    } catch (error) {
      return this.unavailable(reply, error as Error);
    }
  }

  /** The worker's answer, as the client's. */
  private async answer(reply: FastifyReply, res: Dispatcher.ResponseData): Promise<FastifyReply> {
    for (const [name, value] of Object.entries(res.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name) && name !== POSTED_BODY) void reply.header(name, value);
    }
    const posted = res.headers[POSTED_BODY];
    if (typeof posted === 'string') {
      // A large answer the worker handed over as memory (posted-answers.ts): its body comes by message.
      await res.body.dump();
      const pieces = await this.posted.take(posted);
      if (!pieces) throw new Error('its answer was not handed over');
      void reply.header(
        'content-length',
        pieces.reduce((n, piece) => n + piece.length, 0),
      );
      return reply.code(res.statusCode).send(Readable.from(pieces, { objectMode: false }));
    }
    if (res.statusCode === 304) {
      await res.body.dump(); // the client holds the answer (report-cache/): no body
      return reply.code(304).send();
    }
    return reply.code(res.statusCode).send(res.body);
  }

  private unavailable(reply: FastifyReply, error: Error): FastifyReply {
    this.logger.warn(`reads worker did not answer: ${error.message}`);
    return reply
      .code(503)
      .send(ApiError.serviceUnavailable('reads are unavailable on this instance for a moment; retry shortly').toBody());
  }

  private async start(): Promise<void> {
    // The worker's young generation is READS_SEMI_SPACE_MB per semi-space from the start (why:
    // withYoungGeneration). Smaller is worse here: capping it at 24 MB took a million-row statement
    // import's peak from +300 to +200-230 MB, but read-isolation's submission p99 under 60 readers
    // went past 2x quiet (12.8 vs 5.3 ms) in one full run: more scavenges compete for the two cores.
    const worker = withYoungGeneration(this.semiSpaceMb, () => new Worker(workerFile(), { workerData: this.data }));
    this.worker = worker;
    const url = await new Promise<string>((resolve, reject) => {
      worker.once('message', (m: { type: string; url?: string; error?: string }) =>
        m.type === 'listening' ? resolve(m.url!) : reject(new Error(`reads worker failed to start: ${m.error}`)),
      );
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`reads worker exited with code ${code} before it served`)));
    });
    worker.on('message', (m: { type: string; id?: number; event?: CacheEvent } | PostedBody) => {
      if (m.type === 'body') return this.posted.received(m as PostedBody);
      if (m.type !== 'cache') return;
      void this.onCacheEvent(m.event!)
        .catch((e: Error) => this.logger.warn(`applying ${m.event!.kind} from the reads worker: ${e.message}`))
        .finally(() => worker.postMessage({ type: 'cache-ack', id: m.id }));
    });
    const previous = this.pool;
    this.pool = new Pool(url, { connections: 64, keepAliveTimeout: 10_000, headersTimeout: 0, bodyTimeout: 0 });
    void previous?.close();
    worker.on('error', (error) => this.logger.error(`reads worker: ${error.stack ?? error.message}`));
    worker.once('exit', (code) => {
      this.posted.reset();
      if (this.closing) return;
      // A worker that died (a crash, an out-of-memory read) is replaced; reads answer 503 meanwhile.
      this.logger.error(`reads worker exited with code ${code}; starting a new one`);
      this.ready = new Promise((resolve) => setTimeout(resolve, 1_000)).then(() => this.start());
      this.ready.catch((e: Error) => this.logger.error(e.message));
    });
  }
}

/**
 * Starts a worker whose heap has a young generation of `semiSpaceMb` per semi-space from the
 * start. V8 reads the flag when an isolate is made (the worker's, on its own thread, before it
 * runs: 'online'); the main thread's heap, made long before, keeps V8's default.
 *
 * Why: a 9,000-group report allocates ~50 MB while its rows (~10 MB) are alive. In V8's default
 * young generation (starting at 1 MB, grown slowly) every report met two or three scavenges and
 * its rows were promoted, ~10 MB a report; the old generation then grew to 300 MB between
 * mark-compacts whose concurrent marking took the other core: GC helper threads ran 17 ms per
 * report beside the worker's 37. With 64 MB semi-spaces a report's rows die young: helper threads
 * 5-13 ms, the worker 32-35 ms; the process holds ~70 MB more when idle and less after reports
 * (409-549 against 607-641 MB; bench/FINDINGS.md).
 */
export function withYoungGeneration(semiSpaceMb: number, start: () => Worker): Worker {
  if (!semiSpaceMb) return start();
  v8.setFlagsFromString(`--min-semi-space-size=${semiSpaceMb}`);
  v8.setFlagsFromString(`--max-semi-space-size=${semiSpaceMb}`);
  // Back to what the process was started with (V8's default unless given on node's command line).
  const reset = () => {
    v8.setFlagsFromString(`--min-semi-space-size=${startedWith('min-semi-space-size')}`);
    v8.setFlagsFromString(`--max-semi-space-size=${startedWith('max-semi-space-size')}`);
  };
  let worker: Worker;
  try {
    worker = start();
  } catch (error) {
    reset();
    throw error;
  }
  worker.once('online', reset);
  worker.once('exit', reset);
  return worker;
}

/** A size flag's value on node's command line (either spelling), or 0: V8's default. */
function startedWith(flag: string): string {
  const spelled = new RegExp(`^--${flag.replace(/-/g, '[-_]')}=(\\d+)$`);
  for (const arg of process.execArgv) {
    const value = spelled.exec(arg)?.[1];
    if (value) return value;
  }
  return '0';
}

/** The compiled worker: beside this file when running from dist, or in dist when this file is the TS source (tests). */
function workerFile(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const sibling = path.join(here, 'reads.worker.js');
  if (existsSync(sibling)) return sibling;
  let dir = here;
  for (let i = 0; i < 5; i++) {
    const candidate = path.join(dir, 'dist', 'src', 'reads', 'reads.worker.js');
    if (existsSync(candidate)) return candidate;
    dir = path.dirname(dir);
  }
  throw new Error('dist/src/reads/reads.worker.js not found: run `npm run build`');
}
