/**
 * A real Prometheus (Debian's `prometheus`) for tests: scrapes the given jobs every second into a
 * throw-away directory; `query` evaluates PromQL through its HTTP API at a chosen time.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/database/embedded.js';
import { eventually } from './harness.js';

export const PROMETHEUS = process.env.PROMETHEUS_PATH ?? '/usr/bin/prometheus';

export interface Job {
  name: string;
  path: string;
  /** host:port of each target */
  targets: string[];
}

export interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface Prometheus {
  url: string;
  query: (promql: string, time?: number) => Promise<Sample[]>;
  output: () => string;
  stop: () => Promise<void>;
}

export async function startPrometheus(jobs: Job[]): Promise<Prometheus> {
  const dir = mkdtempSync(path.join(tmpdir(), 'spendgate-prometheus-'));
  const config = [
    'global:',
    '  scrape_interval: 1s',
    '  scrape_timeout: 1s',
    'scrape_configs:',
    ...jobs.flatMap((j) => [
      `  - job_name: ${j.name}`,
      `    metrics_path: ${j.path}`,
      '    static_configs:',
      `      - targets: [${j.targets.map((t) => `'${t}'`).join(', ')}]`,
    ]),
  ].join('\n');
  writeFileSync(path.join(dir, 'prometheus.yml'), config);
  const port = await freePort();
  let out = '';
  const proc: ChildProcess = spawn(
    PROMETHEUS,
    [
      `--config.file=${path.join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const url = `http://127.0.0.1:${port}`;
  await eventually(
    async () => {
      if (proc.exitCode !== null) throw new Error(`prometheus exited: ${out}`);
      return fetch(`${url}/-/ready`).then(
        (r) => r.ok,
        () => false,
      );
    },
    30_000,
    100,
  );
  return {
    url,
    output: () => out,
    query: async (promql, time) => {
      const params = new URLSearchParams({ query: promql, ...(time === undefined ? {} : { time: String(time) }) });
      const res = await fetch(`${url}/api/v1/query?${params}`);
      const body = (await res.json()) as { status: string; error?: string; data: { result: Sample[] } };
      if (body.status !== 'success') throw new Error(`PromQL ${promql}: ${body.error}`);
      return body.data.result;
    },
    stop: async () => {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
