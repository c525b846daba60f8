/**
 * Large written answers cross from the reads worker to the main thread as memory, not through the
 * loopback socket (decisions §22). A dashboard's month report is megabytes, asked for every second
 * by every screen; through the socket each answer was written by the worker and read by the main
 * thread in 64 KB turns of system calls and buffers (bench/FINDINGS.md). Instead the worker posts the
 * answer's pieces to the main thread and answers the loopback request with only its status, headers
 * and the id of what it posted; the main thread sends the posted pieces as the body. A kept answer
 * lives in shared memory (report-cache/cache-entries.ts `shared`), so posting it copies nothing:
 * both threads read the same bytes, which are never written again; a report kept project by project
 * is posted as its parts' own bytes between brackets and commas. Smaller answers take the socket.
 */
import type { FastifyInstance } from 'fastify';
import type { MessagePort } from 'node:worker_threads';
import { writtenPieces } from '../graphql/answered-directly.js';

/** The header that names a body handed over as memory; never leaves the gateway. */
export const POSTED_BODY = 'x-spendgate-posted-body';

export interface PostedBody {
  type: 'body';
  id: string;
  /** The body's pieces in order: views of shared memory arrive as the same memory, the rest as copies. */
  pieces: Uint8Array[];
}

/** Worker side: an onSend hook, registered after the one that puts written answers together. */
export function postLargeAnswers(fastify: FastifyInstance, port: Pick<MessagePort, 'postMessage'>): void {
  let sequence = 0;
  fastify.addHook('onSend', async (_request, reply, payload) => {
    const pieces = writtenPieces(payload); // large answers only: smaller ones take the socket
    if (!pieces) return payload;
    const id = String(++sequence);
    // A view of shared memory is posted as that memory; any other piece as a copy of its own bytes (a
    // small Buffer is a view of an 8 KB pool, which posting whole would copy).
    const posted = pieces.map((piece) => (piece.buffer instanceof SharedArrayBuffer ? piece : new Uint8Array(piece)));
    port.postMessage({ type: 'body', id, pieces: posted } satisfies PostedBody);
    reply.removeHeader('content-length');
    void reply.header(POSTED_BODY, id);
    return '';
  });
}

/**
 * Main thread side: bodies handed over by the worker, matched to the loopback answers that name them
 * (either may arrive first). A body nobody asks for within a minute is dropped; a wait for one that
 * never comes ends after `waitMs` (the worker died between the two).
 */
export class PostedBodies {
  private readonly bodies = new Map<string, { body: Buffer[]; timer: NodeJS.Timeout }>();
  private readonly waiting = new Map<
    string,
    { resolve: (body: Buffer[] | undefined) => void; timer: NodeJS.Timeout }
  >();

  /** How many bodies were handed over (a test's evidence that large answers take this way). */
  handedOver = 0;

  constructor(private readonly waitMs = 10_000) {}

  /** A body the worker handed over. */
  received(message: PostedBody): void {
    this.handedOver += 1;
    const body = message.pieces.map((piece) => Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength));
    const waiter = this.waiting.get(message.id);
    if (waiter) {
      this.waiting.delete(message.id);
      clearTimeout(waiter.timer);
      waiter.resolve(body);
      return;
    }
    const timer = setTimeout(() => this.bodies.delete(message.id), 60_000);
    timer.unref();
    this.bodies.set(message.id, { body, timer });
  }

  /** The body `id` names, once it has arrived; undefined if it does not in time. */
  take(id: string): Promise<Buffer[] | undefined> {
    const held = this.bodies.get(id);
    if (held) {
      this.bodies.delete(id);
      clearTimeout(held.timer);
      return Promise.resolve(held.body);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        resolve(undefined);
      }, this.waitMs);
      this.waiting.set(id, { resolve, timer });
    });
  }

  /** A new worker numbers its bodies from 1 again: what the old one handed over or owed is gone. */
  reset(): void {
    for (const { timer } of this.bodies.values()) clearTimeout(timer);
    this.bodies.clear();
    for (const [id, { resolve, timer }] of this.waiting) {
      clearTimeout(timer);
      this.waiting.delete(id);
      resolve(undefined);
    }
  }
}
