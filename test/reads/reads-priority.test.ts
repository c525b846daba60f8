/**
 * The reads thread yields the CPU to submissions (decisions §5): once it serves, it runs at nice 19.
 * It starts at the process's own priority and is lowered only when ready (reads.worker.ts): starting
 * Nest, the schema and the warm-up at the lowest priority took 47 s on a loaded machine, and a gateway
 * serves nothing until its reads thread is up.
 */
import { readdirSync } from 'node:fs';
import { ADMIN, freshDatabase, gateway, http } from '../support/harness.js';
import { niceOf } from '../support/nice.js';

/** How many threads of this process run at nice 19 (/proc/<tid>/stat reads a thread as it reads a process). */
const lowered = () => readdirSync('/proc/self/task').filter((tid) => niceOf(Number(tid)) === 19).length;

test('a serving gateway has one thread at nice 19, its reads thread, and reads are answered', async () => {
  expect(lowered()).toBe(0);
  const gw = await gateway(await freshDatabase());
  try {
    expect(lowered()).toBe(1);
    const res = await http<{ data: { projects: unknown[] } }>(`${gw.url}/graphql`, {
      headers: { authorization: `Bearer ${ADMIN}` },
      body: { query: '{ projects { id } }' },
    });
    expect(res.status).toBe(200);
    expect(res.body.data.projects).toEqual([]);
  } finally {
    await gw.close();
  }
  // Closing the gateway ends its reads thread.
  expect(lowered()).toBe(0);
});
