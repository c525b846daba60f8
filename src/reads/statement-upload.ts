/**
 * A vendor statement's upload through the main thread (reads-thread.ts): the worker first says
 * whether this caller may import it (no body), then the main thread, at the process's priority,
 * takes the body to a file and hands the worker its path (statement-spool.ts). A refused body is
 * read and dropped here, so the client hears the refusal and nothing of it reaches the disk.
 */
import { rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Dispatcher } from 'undici';
import { ApiError } from '../common/api-error.js';
import {
  discard,
  spool,
  SPOOLED_STATEMENT,
  STATEMENT_IMPORT,
  STATEMENT_IMPORT_CHECK,
  type Spooled,
} from '../vendor-statements/statement-spool.js';

/** A request forwarded to the worker. */
export interface Relayed {
  path: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string | Readable;
}

/** The main thread's connection to the worker, as an upload uses it (ReadsThread provides it). */
export interface WorkerHop {
  request(options: Relayed): Promise<Dispatcher.ResponseData>;
  /** Forwards and answers the client with the worker's answer (503 if the worker does not answer). */
  relay(reply: FastifyReply, options: Relayed): Promise<FastifyReply>;
  /** The worker's answer, as the client's. */
  answer(reply: FastifyReply, res: Dispatcher.ResponseData): Promise<FastifyReply>;
  unavailable(reply: FastifyReply, error: Error): FastifyReply;
}

export const isStatementUpload = (request: FastifyRequest): boolean =>
  request.method === 'POST' && request.body instanceof Readable && request.url.split('?')[0] === STATEMENT_IMPORT;

/** `headers`: the client's, as the main thread forwards them (SPOOLED_STATEMENT already removed). */
export async function passStatement(
  hop: WorkerHop,
  request: FastifyRequest,
  reply: FastifyReply,
  headers: Record<string, string>,
  spoolDir: string | undefined,
): Promise<FastifyReply> {
  const body = request.body as Readable;
  const query = request.url.slice(STATEMENT_IMPORT.length);
  const { 'content-type': _type, ...asking } = headers;
  let check: Dispatcher.ResponseData;
  try {
    check = await hop.request({ path: `${STATEMENT_IMPORT_CHECK}${query}`, method: 'POST', headers: asking });
  } catch (error) {
    await discard(body);
    return hop.unavailable(reply, error as Error);
  }
  if (check.statusCode !== 204) {
    await discard(body);
    return hop.answer(reply, check);
  }
  await check.body.dump();
  let spooled: Spooled;
  try {
    spooled = await spool(body, spoolDir);
  } catch (error) {
    // Anything but a refusal spool() made is this gateway's own failure, not the statement's.
    const refusal =
      error instanceof ApiError
        ? error
        : ApiError.serviceUnavailable(
            'this gateway could not take the statement in: nothing was imported; send it again',
          );
    await discard(body); // what is left of it, so that the client hears the answer (a body cut off is already gone)
    return reply.code(refusal.status).send(refusal.toBody());
  }
  try {
    // The worker has imported (or refused) the file by the time its answer's headers are here.
    return await hop.relay(reply, {
      path: request.url,
      method: 'POST',
      headers: { ...headers, [SPOOLED_STATEMENT]: spooled.file },
      body: '',
    });
  } finally {
    await rm(spooled.dir, { recursive: true, force: true });
  }
}
