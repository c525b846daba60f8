/**
 * `npm run bench:tracing`: what OpenTelemetry traces cost a submission (decisions §21). One
 * embedded PostgreSQL, the vendor simulator, and spendgate as its own process, started again for
 * each round with tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT) and on (spans sent over OTLP/HTTP
 * to a sink in this process, which reads and drops them), alternating off/on: chat submissions at a
 * uniform 500 a second (open loop), the gateway's CPU ms per submission and the latencies. Every
 * submission and its settlement-free path makes six spans when on. Writes bench/results/tracing.json;
 * asserts nothing.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { freePort } from '../src/database/embedded.js';
import { openLoopRun } from './open-loop.js';
import { BenchServers, CHAT, benchProject, waitFor } from './servers.js';
import { machine, publish, speedProbe, withScratchPostgres } from './support.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const RATE = Number(process.env.BENCH_OPEN_RATE ?? 500);

async function main() {
  const probeBefore = speedProbe();
  let spansBytes = 0;
  const sink = createServer((req, res) => {
    req.on('data', (c: Buffer) => (spansBytes += c.length));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
  const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
  const rounds: Array<Record<string, unknown>> = [];
  await withScratchPostgres('tracing', [], async (pg, dir) => {
    const servers = new BenchServers();
    try {
      const simPort = await freePort();
      const simulator = servers.simulator(simPort).pid!;
      const postgres = Number(readFileSync(path.join(dir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
      const { key } = await benchProject(pg.url, 'tracing');
      await waitFor(`http://127.0.0.1:${simPort}/__sim/tasks`);
      for (let round = 1; round <= ROUNDS; round++) {
        for (const tracing of ['off', 'on'] as const) {
          const port = await freePort();
          const child = servers.spendgate(
            port,
            pg.url,
            simPort,
            tracing === 'on' ? { OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl, OTEL_BSP_SCHEDULE_DELAY: '1000' } : {},
          );
          await waitFor(`http://127.0.0.1:${port}/healthz`);
          const bytesBefore = spansBytes;
          const run = await openLoopRun(
            `spendgate, tracing ${tracing}, round ${round}`,
            `http://127.0.0.1:${port}/api-platform/v1/chat/completions`,
            { authorization: `Bearer ${key}` },
            CHAT,
            RATE,
            { spendgate: child.pid!, postgres, simulator },
          );
          await new Promise((r) => setTimeout(r, 1500)); // the last batch of spans
          rounds.push({
            round,
            tracing,
            ...run,
            otlpBytesPerSubmission: Math.round((spansBytes - bytesBefore) / (RATE * 12)),
          });
          child.kill('SIGTERM');
          await new Promise((r) => child.once('exit', r));
        }
      }
    } finally {
      await servers.stop();
    }
  });
  sink.close();
  const mean = (tracing: string) => {
    const mine = rounds.filter((r) => r.tracing === tracing);
    const cpu = mine.map((r) => (r.cpuMsPerRequest as Record<string, number>).spendgate ?? 0);
    return Math.round((cpu.reduce((s, x) => s + x, 0) / cpu.length) * 1000) / 1000;
  };
  publish('tracing', {
    machine: `${machine()}, node ${process.version}, PostgreSQL 18 embedded`,
    date: new Date().toISOString(),
    speedProbeMs: { before: probeBefore, after: speedProbe() },
    offeredPerSecond: RATE,
    gatewayCpuMsPerSubmission: { off: mean('off'), on: mean('on') },
    rounds,
  });
}

await main();
