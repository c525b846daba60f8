/**
 * The reads thread's young generation (reads-thread.ts, withYoungGeneration; bench/FINDINGS.md): a worker
 * started with it has semi-spaces of the size asked from its first allocation, while the main
 * thread's heap, and any worker started after it is online, keep V8's default. A report's rows
 * then die young instead of being promoted (bench/FINDINGS.md).
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { withYoungGeneration } from '../../src/reads/reads-thread.js';
import { loadConfig } from '../../src/config/config.js';

/** A worker that reports its new space's size (MB) and exits. */
function newSpaceOfWorker(start: (make: () => Worker) => Worker): Promise<number> {
  const code = `const v8 = require('node:v8'); const { parentPort } = require('node:worker_threads');
    parentPort.postMessage(v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 2 ** 20);`;
  const worker = start(() => new Worker(code, { eval: true }));
  return new Promise((resolve, reject) => {
    worker.once('message', (mb: number) => void worker.terminate().then(() => resolve(mb)));
    worker.once('error', reject);
  });
}

test('the worker gets the semi-space asked for; later workers keep the default', async () => {
  const plain = await newSpaceOfWorker((make) => make());
  expect(plain).toBeLessThan(32); // V8's default starts small (1 MB) and grows with use

  expect(await newSpaceOfWorker((make) => withYoungGeneration(64, make))).toBeGreaterThanOrEqual(64);
  // After it: a plain worker is plain again, and so is this thread's heap.
  expect(await newSpaceOfWorker((make) => make())).toBe(plain);

  // 0 leaves V8's default.
  expect(await newSpaceOfWorker((make) => withYoungGeneration(0, make))).toBe(plain);
});

test('a worker that fails to start leaves the flags as they were', async () => {
  // Refused by the constructor (a bare relative path)…
  expect(() => withYoungGeneration(64, () => new Worker('reads.worker.js'))).toThrow(/path/i);
  expect(await newSpaceOfWorker((make) => make())).toBeLessThan(32);
  // …or dying before it runs (no such file).
  const failed = withYoungGeneration(64, () => new Worker('/nonexistent/reads.worker.js'));
  failed.on('error', () => {});
  await new Promise((resolve) => failed.once('exit', resolve));
  expect(await newSpaceOfWorker((make) => make())).toBeLessThan(32);
});

test('READS_SEMI_SPACE_MB: 64 by default, 0 to 1024, anything else refused', () => {
  expect(loadConfig({}).READS_SEMI_SPACE_MB).toBe(64);
  expect(loadConfig({ READS_SEMI_SPACE_MB: '0' }).READS_SEMI_SPACE_MB).toBe(0);
  expect(() => loadConfig({ READS_SEMI_SPACE_MB: '2048' })).toThrow(/READS_SEMI_SPACE_MB/);
  expect(() => loadConfig({ READS_SEMI_SPACE_MB: 'lots' })).toThrow(/READS_SEMI_SPACE_MB/);
});

test('after the worker is online, later isolates get what node was started with, not V8 defaults', async () => {
  // A process started with its own semi-space size (8 MB): a plain worker after the reads worker has 8 MB again.
  const module = path.resolve('dist/src/reads/reads-thread.js');
  const script = `
    const { Worker } = await import('node:worker_threads');
    const { withYoungGeneration } = await import(${JSON.stringify(module)});
    // The workers inherit --input-type=module: imports, not require.
    const code = "Promise.all([import('node:worker_threads'), import('node:v8')]).then(([w, v8]) => w.parentPort.postMessage(v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 2 ** 20))";
    const size = (w) => new Promise((resolve) => w.once('message', (mb) => w.terminate().then(() => resolve(mb))));
    const v8 = await import('node:v8');
    const main = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 2 ** 20;
    const mainBefore = main();
    const reads = await size(withYoungGeneration(64, () => new Worker(code, { eval: true })));
    const after = await size(new Worker(code, { eval: true }));
    console.log(JSON.stringify({ reads, after, mainKept: main() <= Math.max(mainBefore, 32) }));`;
  // In a process of its own: this thread's heap is then only what the mechanism does to it (in the
  // suite's process, other tests' allocations grew it while the flags were set).
  const out = execFileSync(process.execPath, ['--min_semi_space_size=8', '--input-type=module', '-e', script], {
    encoding: 'utf8',
  });
  expect(JSON.parse(out)).toEqual({ reads: 64, after: 8, mainKept: true });
});
