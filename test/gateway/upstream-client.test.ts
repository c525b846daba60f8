/**
 * The upstream client's edges against a bare local HTTP server (no database involved): the one
 * deadline over a whole answer, a request whose deadline passed while it waited for a connection
 * (never sent), an event stream handed over unread, and a reader that stops early (the upstream
 * exchange is closed with it). The gateway-level consequences (holds kept or released) are in
 * faults.test.ts and budgets.test.ts.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { jest } from '@jest/globals';
import type { Dispatcher } from 'undici';
import { AnswerHandler } from '../../src/upstream/answer-handler.js';
import { UpstreamClient, UpstreamError, type UpstreamStream } from '../../src/upstream/upstream.client.js';

let server: http.Server;
let base: string;
/** Resolved when the server sees the client close a connection mid-answer. */
let closedByClient: Promise<void> = Promise.resolve();

beforeAll(async () => {
  server = http.createServer((req, res) => {
    req.resume();
    if (req.url === '/vendor/json') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"code":200,"data":{"taskId":7}}');
    } else if (req.url === '/vendor/trickle') {
      // Headers at once, then one byte every 50 ms: each silence is short, the answer never ends.
      res.writeHead(200, { 'content-type': 'application/json' });
      const beat = setInterval(() => res.write(' '), 50);
      res.on('close', () => clearInterval(beat));
    } else if (req.url === '/vendor/events') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"n":1}\n\n');
      const beat = setInterval(() => res.write('data: {"n":2}\n\n'), 20);
      closedByClient = new Promise((resolve) => res.on('close', () => (clearInterval(beat), resolve())));
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/vendor`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const client = (overrides: Partial<ConstructorParameters<typeof UpstreamClient>[0]> = {}) =>
  new UpstreamClient({ baseUrl: base, apiKey: 'vendor-key', connectTimeoutMs: 100, timeoutMs: 300, ...overrides });

test('a buffered answer comes back whole, under the base URL path', async () => {
  const c = client();
  try {
    const res = await c.get('/json');
    expect(res).toEqual({
      status: 200,
      contentType: 'application/json',
      body: Buffer.from('{"code":200,"data":{"taskId":7}}'),
    });
  } finally {
    await c.close();
  }
});

test('an answer that trickles past the deadline (timeout + connect timeout = 400 ms) → outcome unknown', async () => {
  const c = client();
  try {
    const started = Date.now();
    const error = await c.get('/trickle').then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UpstreamError);
    expect(error).toMatchObject({ outcome: 'unknown', message: 'upstream did not answer in time (TimeoutError)' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(380);
    expect(Date.now() - started).toBeLessThan(2_000);
  } finally {
    await c.close();
  }
});

test('a request given up before it was written (its deadline passed while it waited for a connection) is aborted at its start: never sent', async () => {
  const outcome = new Promise((resolve, reject) => {
    const handler = new AnswerHandler(null, resolve, reject);
    handler.abort(new DOMException('upstream deadline passed', 'TimeoutError'));
    // undici reaches the handler only once a connection is free: the handler refuses to go on.
    const controller = { abort: jest.fn(), pause: jest.fn(), resume: jest.fn() };
    handler.onRequestStart(controller as unknown as Dispatcher.DispatchController);
    expect(controller.abort).toHaveBeenCalledWith(expect.objectContaining({ name: 'TimeoutError' }));
  });
  await expect(outcome).rejects.toMatchObject({ name: 'TimeoutError' });
});

test('a 200 event stream is handed over unread; a reader that stops early closes the upstream exchange', async () => {
  const c = client({ timeoutMs: 200 });
  try {
    const res = (await c.open('GET', '/events')) as UpstreamStream;
    expect(res.status).toBe(200);
    expect(res.contentType).toBe('text/event-stream');
    // The deadline ended with the headers: the stream outlives timeout + connect timeout (300 ms).
    await new Promise((r) => setTimeout(r, 500));
    let text = '';
    for await (const chunk of res.stream) {
      text += String(chunk);
      if (text.length > 200) break; // stops reading: the stream is destroyed
    }
    expect(text.startsWith('data: {"n":1}\n\n')).toBe(true);
    await closedByClient; // would time the test out if the upstream connection stayed open
  } finally {
    await c.close();
  }
});
