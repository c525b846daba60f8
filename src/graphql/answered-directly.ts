/**
 * A root field answered directly: its resolver writes the field's JSON itself (json-writer.ts)
 * and returns an empty list to GraphQL's execution, and the answer's text gets the written JSON
 * where that empty list stands. Everything else about the request is GraphQL's as before: the
 * validation, the operation guard (cost, permissions, audit), the other fields, the errors, and
 * the envelope as Mercurius serializes it; only the field's rows skip execution's per-value work
 * (bench/FINDINGS.md: a 9,000-group spendReport spent most of its time there).
 *
 * Two hooks of the reads worker's Fastify: before serialization the empty list becomes a token
 * unique to the process and the request; after it, the token's JSON string is replaced by the
 * written JSON. A response without such a field passes both with one WeakMap look-up.
 */
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { GraphQLResolveInfo } from 'graphql';
import { jsonWriter, type JsonWriter } from './json-writer.js';

interface DirectAnswer {
  token: string;
  /** The field's JSON, whole or in pieces that follow each other (a report kept project by project). */
  json: readonly Buffer[];
  digest: string;
}

const pending = new WeakMap<object, Map<string, DirectAnswer>>();
/** The pieces of each answer sent as a stream of them (writtenPieces). */
const pieces = new WeakMap<object, Buffer[]>();
/** From this size on, an answer is sent as its pieces (below, one buffer costs less than a stream). */
const SENT_IN_PIECES_FROM = 64 * 1024;
/** Writers by the query's field node: Mercurius keeps a query's parsed document, so these repeat. */
const writers = new WeakMap<object, JsonWriter | null>();
const NONCE = randomBytes(12).toString('hex');
let sequence = 0;

/**
 * Writes `value` as the answer of the root field `info` resolves and returns true (the resolver
 * then returns []), or returns false where GraphQL's execution must answer it: no writer for the
 * selection, a value it would answer otherwise, a field inside another, or no reply to write to.
 */
export function answerDirectly(context: unknown, info: GraphQLResolveInfo, value: unknown[]): boolean {
  const json = writeDirectly(info, value);
  return json !== undefined && placeDirectly(context, info, json);
}

/** `value` written as the JSON of the root field `info` resolves, or undefined where GraphQL's execution must. */
export function writeDirectly(info: GraphQLResolveInfo, value: unknown[]): Buffer | undefined {
  const node = info.fieldNodes[0]!;
  if (info.path.prev !== undefined || info.fieldNodes.length !== 1) return undefined;
  let write = writers.get(node);
  if (write === undefined) {
    write = jsonWriter(info.returnType, node.selectionSet) ?? null;
    writers.set(node, write);
  }
  if (!write) return undefined;
  try {
    return write(value);
  } catch {
    return undefined; // GraphQL's execution answers it, errors and all
  }
}

/**
 * Puts `json` (writeDirectly's, now or kept from an earlier request of the same selection, whole or in
 * pieces) where the field's answer goes; false when there is no reply to write to. `digest`: a strong
 * validator of its bytes, for the answer's ETag (directDigests).
 */
export function placeDirectly(
  context: unknown,
  info: GraphQLResolveInfo,
  json: Buffer | readonly Buffer[],
  digest = '',
): boolean {
  const reply = (context as { reply?: FastifyReply }).reply;
  if (!reply || info.path.prev !== undefined || info.fieldNodes.length !== 1) return false;
  const answers = pending.get(reply) ?? new Map<string, DirectAnswer>();
  pending.set(reply, answers);
  const pieces = Buffer.isBuffer(json) ? [json] : json;
  answers.set(String(info.path.key), { token: `answered-directly:${NONCE}:${++sequence}`, json: pieces, digest });
  return true;
}

/** A reply's written answers not yet in place: each one's token as it stands (quoted) in the envelope, its digest. */
export function directDigests(reply: FastifyReply): Array<{ quoted: string; digest: string }> {
  return [...(pending.get(reply)?.values() ?? [])].map((a) => ({ quoted: JSON.stringify(a.token), digest: a.digest }));
}

/** The pieces of an onSend payload, when it is a large answer these hooks put together (64 KB and more). */
export function writtenPieces(payload: unknown): Buffer[] | undefined {
  return typeof payload === 'object' && payload !== null ? pieces.get(payload) : undefined;
}

export function answerDirectlyHooks(fastify: FastifyInstance): void {
  fastify.addHook('preSerialization', async (_request, reply, payload) => {
    const answers = pending.get(reply);
    if (!answers) return payload;
    const data = (payload as { data?: Record<string, unknown> | null } | null)?.data;
    for (const [key, answer] of answers) {
      const value = data?.[key];
      if (Array.isArray(value) && value.length === 0) data![key] = answer.token;
      else answers.delete(key); // the field's place was nulled by an error elsewhere: nothing to put back
    }
    return payload;
  });
  fastify.addHook('onSend', async (_request, reply, payload) => {
    const answers = pending.get(reply);
    if (!answers || typeof payload !== 'string') return payload;
    pending.delete(reply);
    // The envelope as Mercurius serialized it, around each written answer's bytes, in the order
    // the answers stand in it (not the order their resolvers finished in).
    const places = [...answers.values()]
      .map(({ token, json }) => ({ quoted: JSON.stringify(token), json }))
      .map((p) => ({ ...p, at: payload.indexOf(p.quoted) }))
      .filter((p) => p.at >= 0)
      .sort((a, b) => a.at - b.at);
    if (places.length === 0) return payload; // a 304, or an answer whose written fields an error nulled
    const parts: Buffer[] = [];
    let from = 0;
    for (const { quoted, json, at } of places) {
      parts.push(Buffer.from(payload.slice(from, at)), ...json);
      from = at + quoted.length;
    }
    parts.push(Buffer.from(payload.slice(from)));
    const size = parts.reduce((n, part) => n + part.length, 0);
    if (size < SENT_IN_PIECES_FROM) return Buffer.concat(parts);
    // A large answer is sent piece by piece, not copied into one buffer: it is megabytes, often kept by
    // the report cache, and a copy of it per response cost more in garbage collection than in copying.
    void reply.header('content-length', size);
    const stream = Readable.from(parts, { objectMode: false });
    pieces.set(stream, parts);
    return stream;
  });
}
