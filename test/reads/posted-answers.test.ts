/**
 * The main thread's side of answers handed over as memory (src/reads/posted-answers.ts): a body and
 * the loopback answer that names it meet whichever arrives first; a wait for one that never comes
 * ends; a new worker's bodies never meet an old worker's names. (Through the real edge:
 * test/reports/graphql-answered-directly.test.ts.)
 */
import { PostedBodies, type PostedBody } from '../../src/reads/posted-answers.js';

const shared = (text: string) => {
  const bytes = new Uint8Array(new SharedArrayBuffer(text.length));
  bytes.set(Buffer.from(text));
  return bytes;
};
const body = (id: string, ...pieces: Uint8Array[]): PostedBody => ({ type: 'body', id, pieces });
const text = (pieces: Buffer[] | undefined) => Buffer.concat(pieces ?? []).toString();

test('a body that arrives before its name, and one after, are each taken once, as the same memory', async () => {
  const bodies = new PostedBodies(1_000);
  const big = shared('{"rows":[1,2,3]}');
  bodies.received(body('1', Buffer.from('['), big, Buffer.from(']')));
  const first = await bodies.take('1');
  expect(text(first)).toBe('[{"rows":[1,2,3]}]');
  expect(first![1]!.buffer).toBe(big.buffer); // shared memory: no copy
  const later = bodies.take('2');
  bodies.received(body('2', Buffer.from('late')));
  expect(text(await later)).toBe('late');
  expect(bodies.handedOver).toBe(2);
  bodies.reset();
});

test('a wait for a body that never comes ends with nothing, and a reset ends every wait', async () => {
  const bodies = new PostedBodies(50);
  expect(await bodies.take('9')).toBeUndefined();
  const waiting = bodies.take('3');
  bodies.reset();
  expect(await waiting).toBeUndefined();
  // What an old worker handed over is gone after a reset: a new worker's id 4 is not it.
  bodies.received(body('4', Buffer.from('old')));
  bodies.reset();
  const fresh = bodies.take('4');
  bodies.received(body('4', Buffer.from('new')));
  expect(text(await fresh)).toBe('new');
});
