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
import { Agent, errors, request } from 'undici';

export interface UpstreamResponse {
  status: number;
  contentType: string;
  body: Buffer;
}

export class UpstreamError extends Error {
  constructor(
    readonly outcome: 'not_sent' | 'unknown',
    message: string,
  ) {
    super(message);
  }
}

export interface UpstreamOptions {
  baseUrl: string;
  apiKey: string;
  connectTimeoutMs: number;
  timeoutMs: number;
  connections?: number;
}

const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

export class UpstreamClient {
  private readonly agent: Agent;
  private readonly base: string;

  constructor(private readonly options: UpstreamOptions) {
    this.base = options.baseUrl.replace(/\/+$/, '');
    this.agent = new Agent({
      connect: { timeout: options.connectTimeoutMs },
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      connections: options.connections ?? 256,
      keepAliveTimeout: 10_000,
      pipelining: 1,
    });
  }

  /** The base URL without credentials, safe to log. */
  get target(): string {
    return this.base;
  }

  post(path: string, body: string): Promise<UpstreamResponse> {
    return this.send('POST', path, body);
  }

  get(path: string): Promise<UpstreamResponse> {
    return this.send('GET', path);
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  private async send(method: 'GET' | 'POST', path: string, body?: string): Promise<UpstreamResponse> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.options.apiKey}`, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    try {
      const res = await request(`${this.base}${path}`, {
        method,
        headers,
        body,
        dispatcher: this.agent,
        signal: AbortSignal.timeout(this.options.timeoutMs + this.options.connectTimeoutMs),
      });
      const buffer = Buffer.from(await res.body.arrayBuffer());
      const contentType = String(res.headers['content-type'] ?? '');
      return { status: res.statusCode, contentType, body: buffer };
    } catch (error) {
      throw classify(error);
    }
  }
}

function classify(error: unknown): UpstreamError {
  const err = error as { code?: string; name?: string; cause?: { code?: string } };
  const code = err.code ?? err.cause?.code ?? err.name ?? 'error';
  if (error instanceof errors.ConnectTimeoutError || NOT_SENT_CODES.has(code)) {
    return new UpstreamError('not_sent', `upstream unreachable (${code})`);
  }
  if (error instanceof errors.HeadersTimeoutError || error instanceof errors.BodyTimeoutError || code === 'TimeoutError') {
    return new UpstreamError('unknown', `upstream did not answer in time (${code})`);
  }
  return new UpstreamError('unknown', `upstream connection failed (${code})`);
}
