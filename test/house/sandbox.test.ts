/**
 * The paths a new user and an operator take first (README, docs/operations.md): the lockfile
 * installs with `npm ci` (as CI and the Dockerfile do), compose refuses to start without an
 * ADMIN_TOKEN and so does the gateway outside the sandbox, and the sandbox survives a restart:
 * its simulator's tasks and its admin token are kept under DATA_DIR.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  eventually,
  http,
  spawnGateway,
  type ChildGateway,
  type GraphqlAnswer,
  type GraphqlData,
} from '../support/harness.js';

const run = promisify(execFile);

test('the lockfile is complete: `npm ci` accepts it (dry run), and CI and the Dockerfile both install with it', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'spendgate-npm-ci-'));
  try {
    copyFileSync('package.json', path.join(dir, 'package.json'));
    copyFileSync('package-lock.json', path.join(dir, 'package-lock.json'));
    // Before the fix: "npm ci can only install packages when your package.json and package-lock.json are in sync".
    const out = await run('npm', ['ci', '--dry-run', '--ignore-scripts', '--no-audit', '--no-fund'], {
      cwd: dir,
      env: process.env,
      timeout: 120_000,
    });
    expect(out.stderr).not.toMatch(/npm error/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  expect(readFileSync('.ci/run', 'utf8')).toMatch(/^npm ci /m);
  expect(readFileSync('Dockerfile', 'utf8')).toMatch(/^RUN npm ci /m);
}, 150_000);

test('outside the sandbox the gateway refuses to start without ADMIN_TOKEN, with one line naming it', async () => {
  const result = await run(process.execPath, ['dist/src/main.js'], {
    env: { PATH: process.env.PATH, UPSTREAM_BASE_URL: 'https://vendor.example', UPSTREAM_API_KEY: 'k-123456789' },
  }).then(
    () => ({ code: 0, stderr: '' }),
    (e: { code: number; stderr: string }) => e,
  );
  expect(result.code).toBe(78);
  expect(result.stderr.trim()).toBe(
    'spendgate: Invalid configuration: ADMIN_TOKEN is required when UPSTREAM_BASE_URL is set (at least 16 random characters)',
  );
});

test('a sandbox restart keeps its tasks and its admin token: earlier tasks poll and settle, nothing stays held', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'spendgate-sandbox-'));
  const env = { DATA_DIR: dir, SIMULATOR_DELAY_MS: '1500', POLL_INTERVAL_MS: '200', LOG_LEVEL: 'silent' };
  const tokenOf = (gw: ChildGateway) =>
    /ADMIN_TOKEN for this sandbox \(GraphQL admin; kept in .*admin-token\): (\S+)/.exec(gw.output())?.[1];
  let gw = await spawnGateway(env);
  try {
    // A second start on the same DATA_DIR refuses in one line and touches nothing.
    const journal = path.join(dir, 'simulator', 'tasks.jsonl');
    const before = readFileSync(journal, 'utf8');
    const second = await run(process.execPath, ['dist/src/main.js'], {
      env: { PATH: process.env.PATH, ...env, PORT: '0' },
    }).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    );
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(
      /^spendgate: another spendgate gateway \(pid \d+\) is running with DATA_DIR .*: stop it first, or start this one with another DATA_DIR and PORT\n$/,
    );
    expect(readFileSync(journal, 'utf8')).toBe(before);
    const admin = tokenOf(gw)!;
    expect(admin).toMatch(/^sga_/);
    const gql = async (query: string, variables?: Record<string, unknown>) =>
      (await http<GraphqlAnswer<GraphqlData>>(`${gw.url}/graphql`, { key: admin, body: { query, variables } })).body;
    const projectId = (await gql('mutation { createProject(name: "sandbox") }')).data.createProject;
    const key = (await gql('mutation($p: ID!) { issueApiKey(projectId: $p) }', { p: projectId })).data.issueApiKey;
    const submit = () =>
      http(`${gw.url}/api-platform/v1/generations`, { key, body: { model: 'seedream-4.0', prompt: 'restart' } });
    const done = (await submit()).body.data.taskId;
    await eventually(
      async () => (await http(`${gw.url}/api-platform/v1/tasks/${done}`, { key })).body.data?.status === 'ready',
      10_000,
      100,
    );
    const inFlight = (await submit()).body.data.taskId; // still processing, hold kept, when the sandbox stops

    gw.proc.kill('SIGTERM');
    expect(await gw.exited).toBe(0);
    gw = await spawnGateway(env);
    expect(tokenOf(gw)).toBe(admin);

    // Before the fix: 502 for every earlier task (the simulator had forgotten it).
    const polled = await http(`${gw.url}/api-platform/v1/tasks/${done}`, { key });
    expect(polled.status).toBe(200);
    expect(polled.body.data).toMatchObject({ taskId: done, status: 'ready' });
    const settled = await eventually(
      async () => {
        const t = (
          await gql('query($t: ID!) { task(taskId: $t) { status held charge { amount } } }', { t: String(inFlight) })
        ).data.task;
        return t.status === 'ready' ? t : undefined;
      },
      15_000,
      200,
    );
    expect(settled).toEqual({ status: 'ready', held: '0', charge: { amount: '0.04' } });
  } finally {
    gw.proc.kill('SIGTERM');
    await gw.exited;
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);

test('`spendgate --help` (and `npm run cli -- --help`) prints the commands and exits 0', async () => {
  const out = await run(process.execPath, ['dist/src/cli/main.js', '--help'], { env: { PATH: process.env.PATH } });
  expect(out.stdout).toMatch(/^usage: spendgate <command>/);
  expect(out.stdout).toMatch(/reconcile/);
});
