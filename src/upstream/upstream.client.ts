/**
 * HTTP client to the vendor (undici). The vendor key is added here and nowhere else; it is never
 * put in an error message, a response or a log line.
 *
 * Errors are classified by what they mean for the money:
 * - `not_sent`: the request certainly did not reach the vendor (connection refused, connect
 *   timeout): safe to release the hold.
 * - `unknown`: the request may have been accepted (timeout or reset after sending): the hold stays
 *   and the task is marked unknown for review.
 */
import { Agent, errors } from 'undici';
import { AnswerHandler } from './answer-handler.js';
import { isEventStream } from './event-stream.js';
import type { UpstreamOptions, UpstreamResponse, UpstreamStream } from './upstream.types.js';

export type { UpstreamOptions, UpstreamResponse, UpstreamStream };

export class UpstreamError extends Error {
  constructor(
    readonly outcome: 'not_sent' | 'unknown',
    message: string,
  ) {
    super(message);
  }
}

const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

export class UpstreamClient {
  private readonly agent: Agent;
  private readonly origin: string;
  /** The base URL's path (a vendor may be mounted under one), prefixed to every request's path. */
  private readonly basePath: string;
  /** host[:port] of the vendor, for traces (never its key or path). */
  readonly host: string;

  constructor(private readonly options: UpstreamOptions) {
    const url = new URL(options.baseUrl);
    this.origin = url.origin;
    this.host = url.host;
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.agent = new Agent({
      connect: { timeout: options.connectTimeoutMs },
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      connections: options.connections ?? 256,
      keepAliveTimeout: 10_000,
      pipelining: 1,
    });
  }

  get(path: string): Promise<UpstreamResponse> {
    return this.send('GET', path);
  }

  /** Like post/get, but a 200 event stream comes back unread (decisions §1). */
  open(method: 'GET' | 'POST', path: string, body?: string): Promise<UpstreamResponse | UpstreamStream> {
    return this.send(method, path, body, true);
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  private send(method: 'GET' | 'POST', path: string, body?: string): Promise<UpstreamResponse>;
  private send(
    method: 'GET' | 'POST',
    path: string,
    body: string | undefined,
    streams: true,
  ): Promise<UpstreamResponse | UpstreamStream>;
  private async send(
    method: 'GET' | 'POST',
    path: string,
    body?: string,
    streams = false,
  ): Promise<UpstreamResponse | UpstreamStream> {
    const accept = streams ? 'application/json, text/event-stream' : 'application/json';
    const headers: Record<string, string> = { authorization: `Bearer ${this.options.apiKey}`, accept };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let timer: NodeJS.Timeout | undefined;
    try {
      return await new Promise<UpstreamResponse | UpstreamStream>((resolve, reject) => {
        const handler = new AnswerHandler(
          streams ? (status, type) => status === 200 && isEventStream(type) : null,
          resolve,
          reject,
        );
        // One deadline for the whole answer; an event stream is exempt once its headers are in, as it
        // may rightly last longer than any one answer (bodyTimeout still bounds each silence in it).
        timer = setTimeout(
          () => handler.abort(new DOMException('upstream deadline passed', 'TimeoutError')),
          this.options.timeoutMs + this.options.connectTimeoutMs,
        );
        this.agent.dispatch({ origin: this.origin, path: `${this.basePath}${path}`, method, headers, body }, handler);
      });
    } catch (error) {
      throw classify(error);
    } finally {
      clearTimeout(timer); // also when a stream is handed over: the deadline ends with its headers
    }
  }
}

function classify(error: unknown): UpstreamError {
  const err = error as { code?: string; name?: string; cause?: { code?: string } };
  // A DOMException (the deadline) has a numeric code; its name says what happened.
  const code = (typeof err.code === 'string' ? err.code : undefined) ?? err.cause?.code ?? err.name ?? 'error';
  if (error instanceof errors.ConnectTimeoutError || NOT_SENT_CODES.has(code)) {
    return new UpstreamError('not_sent', `upstream unreachable (${code})`);
  }
  if (
    error instanceof errors.HeadersTimeoutError ||
    error instanceof errors.BodyTimeoutError ||
    code === 'TimeoutError'
  ) {
    return new UpstreamError('unknown', `upstream did not answer in time (${code})`);
  }
  return new UpstreamError('unknown', `upstream connection failed (${code})`);
}
