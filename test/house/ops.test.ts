/**
 * Operations and security edges: health, readiness, Prometheus metrics, the per-key rate limit, and
 * the vendor key never leaving the gateway (not even when the vendor rejects it).
 */
import type { Gateway } from '../../src/bootstrap.js';
import { createSimulator } from '../../src/simulator/simulator.js';
import { freshDatabase, gateway, http, pollTask, projectWithKey, submitGeneration } from '../support/harness.js';

const IMAGE = { model: 'seedream-4.0', prompt: 'ops' };

describe('health, readiness, metrics', () => {
  let gw: Gateway;
  let key: string;
  beforeAll(async () => {
    gw = await gateway(await freshDatabase(), { SIMULATOR_DELAY_MS: '0' });
    ({ key } = await projectWithKey(gw));
  });
  afterAll(() => gw.close());

  test('/healthz and /readyz answer', async () => {
    expect((await http(`${gw.url}/healthz`)).body).toEqual({ status: 'ok' });
    const ready = await http(`${gw.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ready', database: 'ok', upstream: 'ok', reads: 'ok' });
  });

  test('/metrics: requests by route and status, holds, settlements, upstream errors, submission stages; no money (that is /metrics/books)', async () => {
    const res = await submitGeneration(gw, key, IMAGE);
    await pollTask(gw, key, res.body.data.taskId);
    await submitGeneration(gw, key, { model: 'nope', prompt: 'x' });
    const metrics = await http(`${gw.url}/metrics`);
    expect(metrics.headers.get('content-type')).toMatch(/text\/plain/);
    expect(metrics.text).toMatch(
      /spendgate_http_request_duration_seconds_count\{method="POST",route="\/api-platform\/v1\/generations",status="200"\} 1/,
    );
    expect(metrics.text).toMatch(
      /spendgate_http_request_duration_seconds_count\{method="POST",route="\/api-platform\/v1\/generations",status="400"\} 1/,
    );
    expect(metrics.text).toMatch(/spendgate_holds_total\{outcome="held"\} 1/);
    expect(metrics.text).toMatch(/spendgate_settlements_total\{status="ready"\} 1/);
    // Money is the books' (/metrics/books), never this instance's own count
    expect(metrics.text).not.toContain('spendgate_spend_total');
    expect(metrics.text).toContain('spendgate_upstream_errors_total');
    // One accepted submission: one hold, one upstream call, one record, each timed.
    for (const stage of ['hold', 'upstream', 'record']) {
      expect(metrics.text).toMatch(new RegExp(`spendgate_submission_stage_seconds_count\\{stage="${stage}"\\} 1\\n`));
    }
  });
});

test('per-key rate limit → 429 in the error shape; other keys are not affected', async () => {
  const gw = await gateway(await freshDatabase(), { RATE_LIMIT_PER_SECOND: '5' });
  try {
    const a = await projectWithKey(gw);
    const b = await projectWithKey(gw);
    const started = Date.now();
    const results = await Promise.all(Array.from({ length: 12 }, () => submitGeneration(gw, a.key, IMAGE)));
    const elapsed = (Date.now() - started) / 1000;
    const limited = results.filter((r) => r.status === 429);
    // A full bucket of 5, refilled at 5 a second while the burst is let in: on a slow machine the
    // burst takes long enough for a token or two to come back, never more than that.
    const allowed = results.filter((r) => r.status === 200).length;
    expect(allowed).toBeGreaterThanOrEqual(5);
    expect(allowed).toBeLessThanOrEqual(5 + Math.floor(elapsed * 5));
    expect(allowed + limited.length).toBe(12);
    expect(limited[0]!.body).toEqual({ code: 4290, message: 'rate limit for this API key exceeded; retry shortly' });
    expect((await submitGeneration(gw, b.key, IMAGE)).status).toBe(200);
  } finally {
    await gw.close();
  }
});

test('a vendor that refuses our key: the client gets a clear 502 and never the vendor key', async () => {
  const vendor = createSimulator({ apiKey: 'the-real-vendor-key' });
  const vendorUrl = await vendor.app.listen({ port: 0, host: '127.0.0.1' });
  const gw = await gateway(await freshDatabase(), {
    UPSTREAM_BASE_URL: vendorUrl,
    UPSTREAM_API_KEY: 'a-wrong-vendor-key-123',
  });
  try {
    const { key } = await projectWithKey(gw);
    const res = await submitGeneration(gw, key, IMAGE);
    expect(res.status).toBe(502);
    expect(res.body).toMatchObject({ code: 5020, details: { upstreamStatus: 401 } });
    expect(res.text).not.toContain('a-wrong-vendor-key-123');
    const ready = await http(`${gw.url}/readyz`);
    expect(ready.text).not.toContain('a-wrong-vendor-key-123');
  } finally {
    await gw.close();
    await vendor.app.close();
  }
});
