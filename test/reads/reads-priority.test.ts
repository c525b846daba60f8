/**
 * The reads thread yields the CPU to submissions (decisions §5): once it serves, it runs at nice 19.
 * It starts at the process's own priority and is lowered only when ready (reads.worker.ts): starting
 * Nest, the schema and the warm-up at the lowest priority took 47 s on a loaded machine, and a gateway
 * serves nothing until its reads thread is up.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { ADMIN, freshDatabase, gateway, http } from '../support/harness.js';

/** The nice value of every thread of this process (Linux: /proc/self/task/<tid>/stat, field 19). */
function threadNices(): Map<number, number> {
  const nices = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      // After the command name (which may hold spaces) come fields 3 onwards; nice is field 19.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      nices.set(Number(tid), Number(fields[19 - 3]));
    } catch {
      // the thread ended while listed
    }
  }
  return nices;
}

const lowered = () => [...threadNices().values()].filter((n) => n === 19).length;

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
