/**
 * GraphQL's side of cached reports (decisions §22):
 * - a resolver keys its answer by its arguments, what the caller may see and its selection
 *   (`selectionKey`), and records what it answered with (`recordField`);
 * - the answer then says, in `extensions.books`, when its figures were computed (the oldest of its
 *   fields) and the books stamp each claims; whether every field came from memory is said outside
 *   the body (`X-Spendgate-Cache: hit` or `computed`), so an unchanged answer keeps its bytes and ETag;
 * - it carries a strong ETag, over the envelope and the digests of the answers written directly
 *   (answered-directly.ts: their bytes are not hashed again), so `If-None-Match` is answered 304;
 *   `Cache-Control: private, immutable` when every root field is a report of closed months, else
 *   `private, no-cache` (ask again; the ETag makes it cheap).
 */
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Kind, print, type GraphQLResolveInfo, type OperationDefinitionNode } from 'graphql';
import { directDigests } from '../graphql/answered-directly.js';
import type { CachedAnswer, Cacheable } from './report-cache.service.js';
import { holds } from './cache-entries.js';

interface FieldAnswer {
  version: string;
  computedAt: Date;
  closed: boolean;
  hit: boolean;
}

interface Books {
  /** Root fields the operation asks for (Infinity when fragments make it unclear). */
  roots: number;
  fields: Map<string, FieldAnswer>;
  /** Set before serialization: the answer has no errors, so it gets an ETag. */
  valid: boolean;
}

const books = new WeakMap<FastifyReply, Books>();
const printed = new WeakMap<object, string>();

/** What shapes a field's answer beyond its arguments: its selection, the fragments, the variables. */
export function selectionKey(info: GraphQLResolveInfo): string {
  const node = info.fieldNodes[0]!;
  let text = printed.get(node);
  if (text === undefined) {
    text = info.fieldNodes.map((n) => print(n)).join(' ');
    printed.set(node, text);
  }
  if (text.includes('...'))
    text += Object.values(info.fragments)
      .map((f) => print(f))
      .join(' ');
  if (text.includes('$')) text += JSON.stringify(info.variableValues);
  return text;
}

/** Remembers what a root field answered with, for the response's extensions and ETag. */
export function recordField(context: unknown, info: GraphQLResolveInfo, answer: CachedAnswer<Cacheable>): void {
  const reply = (context as { reply?: FastifyReply }).reply;
  if (!reply || !answer.version || info.path.prev !== undefined) return;
  let record = books.get(reply);
  if (!record) books.set(reply, (record = { roots: rootCount(info.operation), fields: new Map(), valid: false }));
  const { version, computedAt, closed, hit } = answer;
  record.fields.set(String(info.path.key), { version, computedAt, closed, hit });
}

/** Registered before answered-directly's hooks, which put the written answers in place after these. */
export function reportCacheHooks(fastify: FastifyInstance): void {
  fastify.addHook('preSerialization', async (_request, reply, payload) => {
    const record = books.get(reply);
    const answer = payload as { data?: unknown; errors?: unknown[]; extensions?: Record<string, unknown> } | null;
    if (!record || !answer || typeof answer !== 'object' || answer.errors?.length || !answer.data) return payload;
    record.valid = true;
    const fields = [...record.fields.values()];
    const oldest = fields.reduce((a, f) => (f.computedAt < a ? f.computedAt : a), fields[0]!.computedAt);
    answer.extensions = {
      ...answer.extensions,
      books: {
        computedAt: oldest.toISOString(),
        // By name, not in the order the fields finished: the same answer is the same bytes (and ETag).
        versions: Object.fromEntries(
          [...record.fields].sort(([a], [b]) => (a < b ? -1 : 1)).map(([alias, f]) => [alias, f.version]),
        ),
      },
    };
    return answer;
  });
  fastify.addHook('onSend', async (request, reply, payload) => {
    const record = books.get(reply);
    if (!record?.valid || typeof payload !== 'string' || reply.statusCode !== 200) return payload;
    // The envelope with each written answer's digest where its bytes will go: a validator of the whole.
    let envelope = payload;
    for (const { quoted, digest } of directDigests(reply)) {
      if (!digest) return payload; // an answer written but not kept: nothing vouches for its bytes
      envelope = envelope.split(quoted).join(digest);
    }
    const etag = `"g${createHash('sha256').update(envelope).digest('base64url').slice(0, 32)}"`;
    const final = record.fields.size >= record.roots && [...record.fields.values()].every((f) => f.closed);
    void reply
      .header('etag', etag)
      .header('cache-control', final ? 'private, immutable' : 'private, no-cache')
      .header('x-spendgate-cache', [...record.fields.values()].every((f) => f.hit) ? 'hit' : 'computed');
    if (!holds(request.headers, etag)) return payload;
    void reply.code(304);
    return '';
  });
}

function rootCount(operation: OperationDefinitionNode): number {
  let count = 0;
  for (const selection of operation.selectionSet.selections) {
    if (selection.kind !== Kind.FIELD) return Infinity;
    if (selection.name.value !== '__typename') count++;
  }
  return count;
}
