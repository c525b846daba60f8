/**
 * The README's examples run as written (the README is for users): every ```sh block of README.md, in
 * order, in one bash session with `set -eu -o pipefail`, against a fresh sandbox gateway started
 * as `npm start` starts it, from the checkout (the CLI examples need it). Only GW and DATA_DIR
 * differ from a user's terminal, and the README reads both with its own defaults.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnGateway } from '../support/harness.js';

/** The ```sh blocks of a Markdown text, in order (```console blocks are shown, not run). */
export function shellBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

test('every README example runs verbatim against a fresh sandbox, with no GraphQL error', async () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'spendgate-readme-'));
  const gw = await spawnGateway({
    DATA_DIR: dataDir,
    SIMULATOR_DELAY_MS: '1000',
    POLL_INTERVAL_MS: '200',
    LOG_LEVEL: 'silent',
  });
  try {
    const blocks = shellBlocks(readFileSync('README.md', 'utf8'));
    expect(blocks.length).toBeGreaterThanOrEqual(7);
    const script = ['set -eu -o pipefail', ...blocks].join('\n');
    const { code, out } = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const bash = spawn('bash', ['-c', script], {
        env: { PATH: process.env.PATH, HOME: process.env.HOME, GW: gw.url, DATA_DIR: dataDir },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      bash.stdout.on('data', (d) => (out += d));
      bash.stderr.on('data', (d) => (out += d));
      bash.on('exit', (c) => resolve({ code: c, out }));
    });
    if (code !== 0 || /"errors"/.test(out)) process.stdout.write(`README run (exit ${code}):\n${out}\n`);
    expect(code).toBe(0);
    expect(out).not.toMatch(/"errors"/);
    expect(out).toMatch(/"code":4020,"message":"budget [0-9a-f-]+ \(each user, here customer-8812, monthly/); // the EACH_USER refusal
    expect(out).toMatch(/"resolveTask":\{"status":"ready","needsReview":false,"net":"/);
    expect(out).toMatch(/reconcile: clean/);
    expect(out).toMatch(/"viewer":\{"kind":"PERSON","role":"OWNER","email":"owner@example.com"/);
    expect(out).toMatch(/^audit verify: \d+ records chain; head /m);
    expect(out).toMatch(/^BilledCost,BillingAccountId,/m); // the FOCUS export's header
    expect(out).toMatch(/"class":"billed_not_ours","unit":"USD","count":1,/); // the sandbox statement's injected extra task
  } finally {
    gw.proc.kill('SIGTERM');
    await gw.exited;
    rmSync(dataDir, { recursive: true, force: true });
  }
}, 120_000);
