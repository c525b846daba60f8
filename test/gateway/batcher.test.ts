/**
 * The group-commit batcher's scheduling, on its own (the hold path it serves is tested through
 * the running service in budgets.test.ts): which batches go out at once, and which wait.
 */
import { Batcher, type Pipeline } from '../../src/common/batcher.js';

/** A write that records each batch and finishes only when told to. */
function controlledWrite() {
  const batches: number[][] = [];
  const finish: Array<() => void> = [];
  const write = (items: number[]) =>
    new Promise<number[]>((resolve) => {
      batches.push(items);
      finish.push(() => resolve(items));
    });
  return { batches, finish, write };
}

const settle = () => new Promise((r) => setImmediate(r));
const pushAll = (b: Batcher<number, number>, n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => b.push(from + i));

test('what exceeds maxBatch goes out at once as a second batch when a slot is free', async () => {
  const w = controlledWrite();
  const b = new Batcher<number, number>(w.write, { maxBatch: 5, maxInFlight: 2 });
  const done = pushAll(b, 8);
  await settle();
  await settle();
  expect(w.batches.map((x) => x.length)).toEqual([5, 3]);
  w.finish.forEach((f) => f());
  expect(await Promise.all(done)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
});

describe('a pipeline: a second batch only for enough waiting items and while the shared slots allow', () => {
  const pipeline = (): Pipeline => ({ from: 8, slots: { inFlight: 0, max: 2 } });

  test('a burst of twice `from` goes out as two halves at once', async () => {
    const w = controlledWrite();
    const b = new Batcher<number, number>(w.write, { maxInFlight: 2, pipeline: pipeline() });
    const done = pushAll(b, 20);
    await settle();
    await settle();
    expect(w.batches.map((x) => x.length)).toEqual([10, 10]);
    w.finish.forEach((f) => f());
    await Promise.all(done);
  });

  test('fewer than `from` waiting beside a batch in flight wait for it, then go together', async () => {
    const w = controlledWrite();
    const b = new Batcher<number, number>(w.write, { maxInFlight: 2, pipeline: pipeline() });
    const first = pushAll(b, 1);
    await settle();
    const rest = pushAll(b, 7, 1);
    await settle();
    expect(w.batches.map((x) => x.length)).toEqual([1]);
    w.finish[0]!();
    await Promise.all(first);
    await settle();
    expect(w.batches.map((x) => x.length)).toEqual([1, 7]);
    w.finish[1]!();
    await Promise.all(rest);
  });

  test('while another lane has a batch in flight, a lane sends a burst whole, one batch at a time', async () => {
    const shared = pipeline();
    const other = controlledWrite();
    const mine = controlledWrite();
    const laneA = new Batcher<number, number>(other.write, { maxInFlight: 2, pipeline: shared });
    const laneB = new Batcher<number, number>(mine.write, { maxInFlight: 2, pipeline: shared });
    const a = pushAll(laneA, 1);
    await settle();
    const burst = pushAll(laneB, 20);
    await settle();
    await settle();
    expect(mine.batches.map((x) => x.length)).toEqual([20]);
    const more = pushAll(laneB, 10, 20);
    await settle();
    expect(mine.batches).toHaveLength(1); // two lanes in flight: the slots are full
    other.finish[0]!();
    await Promise.all(a);
    mine.finish[0]!();
    await Promise.all(burst);
    await settle();
    expect(mine.batches.map((x) => x.length)).toEqual([20, 10]);
    mine.finish[1]!();
    await Promise.all(more);
    expect(shared.slots.inFlight).toBe(0);
  });
});
