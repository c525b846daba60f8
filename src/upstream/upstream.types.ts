/** The upstream client's answers and options (its own file: the client and its answer handler both use them). */
import type { Readable } from 'node:stream';

export interface UpstreamResponse {
  status: number;
  contentType: string;
  body: Buffer;
}

/** A 200 `text/event-stream` answer, handed over unread so it can be relayed as it arrives. */
export interface UpstreamStream {
  status: number;
  contentType: string;
  stream: Readable;
}

export interface UpstreamOptions {
  baseUrl: string;
  apiKey: string;
  connectTimeoutMs: number;
  timeoutMs: number;
  connections?: number;
}
