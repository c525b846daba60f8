/**
 * What a client can hold open before it proves who it is (decisions §5). A request's headers and
 * body must arrive within REQUEST_TIMEOUT_MS (a stalled body, or headers dripped a byte at a
 * time, is cut off), an idle connection is closed, and an address may hold at most
 * MAX_UNAUTHENTICATED_CONNECTIONS_PER_ADDRESS connections that have not yet carried an answered,
 * authenticated request: one client without a key cannot take the gateway's file descriptors.
 * A connection counts as authenticated once a response on it was not a 401, 403, 408, 429 or 431.
 * Errors the HTTP parser meets before any handler (headers over 16 KB, malformed requests, a
 * timeout) are answered in the one refusal shape.
 */
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface GuardSettings {
  requestTimeoutMs: number;
  /** Idle connections (no byte either way) close after this; longer than any upstream call. */
  idleTimeoutMs: number;
  maxUnauthenticatedPerAddress: number;
}

/** Node's own limit on a request's headers; past it the parser refuses (431). */
export const MAX_HEADER_BYTES = 16 * 1024;
const REFUSED = new Set([401, 403, 408, 429, 431]);

export class ConnectionGuard {
  private readonly pending = new Map<string, number>();
  private readonly unproven = new WeakSet<Socket>();

  constructor(private readonly settings: GuardSettings) {}

  /** Fastify's serverFactory: the HTTP server with the timeouts and the per-address count. */
  serverFactory = (handler: RequestListener<typeof IncomingMessage, typeof ServerResponse>): Server => {
    const server = createServer(
      {
        requestTimeout: this.settings.requestTimeoutMs,
        headersTimeout: this.settings.requestTimeoutMs,
        // How often Node looks for requests past their time: often enough that the timeout means it.
        connectionsCheckingInterval: Math.max(100, Math.min(30_000, Math.floor(this.settings.requestTimeoutMs / 4))),
        maxHeaderSize: MAX_HEADER_BYTES,
      },
      handler,
    );
    server.on('connection', (socket: Socket) => this.admit(socket));
    return server;
  };

  /** An answered request: a connection whose request was not refused as unauthenticated is proven. */
  answered(socket: Socket | null | undefined, statusCode: number): void {
    if (!socket || REFUSED.has(statusCode) || !this.unproven.has(socket)) return;
    this.unproven.delete(socket);
    this.release(socket.remoteAddress ?? '');
  }

  /** The refusal a client error gets (written on the raw socket: no request object exists yet). */
  clientError = (error: Error & { code?: string }, socket: Socket): void => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const [status, reason, code, message] =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? [
            431,
            'Request Header Fields Too Large',
            4310,
            `request headers are too large (at most ${MAX_HEADER_BYTES / 1024} KB)`,
          ]
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'Request Timeout', 4080, `the request did not arrive within ${this.settings.requestTimeoutMs} ms`]
          : [400, 'Bad Request', 4000, 'the request is not valid HTTP'];
    const body = JSON.stringify({ code, message });
    if (socket.writable) {
      socket.write(
        `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy();
  };

  private admit(socket: Socket): void {
    const address = socket.remoteAddress ?? '';
    const count = (this.pending.get(address) ?? 0) + 1;
    if (count > this.settings.maxUnauthenticatedPerAddress) {
      socket.destroy();
      return;
    }
    this.pending.set(address, count);
    this.unproven.add(socket);
    socket.setTimeout(this.settings.idleTimeoutMs, () => socket.destroy());
    socket.once('close', () => {
      if (this.unproven.delete(socket)) this.release(address);
    });
  }

  private release(address: string): void {
    const left = (this.pending.get(address) ?? 1) - 1;
    if (left <= 0) this.pending.delete(address);
    else this.pending.set(address, left);
  }
}
