import type { Readable } from 'node:stream';

/**
 * What the gateway answers on the vendor's paths: a status, a content type, and a body (a stream while an event stream
 * is relayed).
 */
export interface GatewayReply {
  status: number;
  contentType: string;
  body: string | Buffer | Readable;
}
