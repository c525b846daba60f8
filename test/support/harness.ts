/**
 * Test harness: a fresh database per call, real gateways on it (HTTP on a free port, sandbox
 * simulator), and small helpers to talk to them. No mocks: PostgreSQL, HTTP and GraphQL are real.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { startGateway, type Gateway } from '../../src/bootstrap.js';
import { migrate } from '../../src/database/migrate.js';
import { ProjectsService } from '../../src/projects/projects.service.js';

export const ADMIN = 'test-admin-token-0123456789';

export type { GatewayAnswer, GraphqlAnswer, GraphqlData, Row } from './answers.js';
import type { GatewayAnswer, GraphqlAnswer, GraphqlData, Row } from './answers.js';

/**
 * A new database with every migration applied: a copy of one migrated once per run and UTC day
 * (`CREATE DATABASE … TEMPLATE` copies files in ~0.1 s; migrating takes ~1 s, and the suites ask for
 * ~120). The schema is the same; test/database's own tests migrate from empty with emptyDatabase.
 */
export async function freshDatabase(): Promise<string> {
  return newDatabase(`TEMPLATE ${await migratedTemplate()}`);
}

/** A new database on the suite's server, with nothing in it: not even the migrations. */
export async function emptyDatabase(): Promise<string> {
  return newDatabase('');
}

function serverUrl(): string {
  return readFileSync(path.resolve('.test-data', 'url'), 'utf8').trim();
}

function databaseUrl(name: string): string {
  const url = new URL(serverUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

async function onServer<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: serverUrl() });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

async function newDatabase(options: string): Promise<string> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  await onServer((client) => client.query(`CREATE DATABASE ${name} ${options}`));
  return databaseUrl(name);
}

/**
 * The run's migrated template, made by the first file that asks (an advisory lock keeps two from
 * making it). It is migrated under another name and renamed when done, so a copy never starts from
 * a half-migrated one. Its name carries the UTC day: the months' partitions are made from today.
 */
async function migratedTemplate(): Promise<string> {
  const name = `template_${new Date().toISOString().slice(0, 10).replaceAll('-', '')}`;
  return onServer(async (client) => {
    await client.query('SELECT pg_advisory_lock(72707370)');
    try {
      const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (found.rowCount === 0) {
        const building = `building_${randomBytes(6).toString('hex')}`;
        await client.query(`CREATE DATABASE ${building}`);
        await migrate(databaseUrl(building));
        await client.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
      }
      return name;
    } finally {
      await client.query('SELECT pg_advisory_unlock(72707370)');
    }
  });
}

export async function gateway(databaseUrl: string, env: Record<string, string> = {}): Promise<Gateway> {
  return startGateway({
    DATABASE_URL: databaseUrl,
    // Each gateway's own sandbox state (the simulator's journal), never the checkout's ./.data:
    // under the suite's .test-data/gateways, which the global teardown removes.
    DATA_DIR: mkdtempSync(path.resolve('.test-data', 'gateways', 'gw-')),
    PORT: '0',
    LOG_LEVEL: 'silent',
    ADMIN_TOKEN: ADMIN,
    SIMULATOR_DELAY_MS: '200',
    POLL_INTERVAL_MS: '100',
    NODE_ENV: 'test',
    // Tests send many bad keys on purpose; the failed sign-in limit has its own test.
    AUTH_FAILURES_PER_MINUTE: '1000000',
    ...env,
  });
}

export async function projectWithKey(
  gw: Gateway,
  name = `p-${randomBytes(4).toString('hex')}`,
): Promise<{ projectId: string; key: string }> {
  const projects = new ProjectsService(gw.db);
  const project = await projects.create(name);
  return { projectId: project.id, key: await projects.issueKey(project.id) };
}

/** A new key of the project, with default tags ("name=value"). */
export async function keyWithTags(gw: Gateway, projectId: string, tags: string[]): Promise<string> {
  return new ProjectsService(gw.db).issueKey(projectId, tags);
}

export interface HttpResult<T = unknown> {
  status: number;
  body: T;
  text: string;
  headers: Headers;
}

export async function http<T = GatewayAnswer>(
  url: string,
  init: { method?: string; key?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<HttpResult<T>> {
  const headers: Record<string, string> = { ...(init.headers ?? {}) };
  if (init.key) headers.authorization = `Bearer ${init.key}`;
  let body: string | undefined = init.raw;
  if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(url, { method: init.method ?? (body === undefined ? 'GET' : 'POST'), headers, body });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, body: parsed as T, text, headers: res.headers };
}

export const submitChat = (gw: Gateway, key: string, body: unknown, headers?: Record<string, string>) =>
  http(`${gw.url}/api-platform/v1/chat/completions`, { key, body, ...(headers ? { headers } : {}) });
export const submitGeneration = (gw: Gateway, key: string, body: unknown, headers?: Record<string, string>) =>
  http(`${gw.url}/api-platform/v1/generations`, { key, body, ...(headers ? { headers } : {}) });
export const pollTask = (gw: Gateway, key: string, taskId: string | number) =>
  http(`${gw.url}/api-platform/v1/tasks/${taskId}`, { key });

export async function graphql<T = GraphqlData>(
  gw: Gateway,
  token: string,
  query: string,
  variables?: Record<string, unknown>,
) {
  return http<GraphqlAnswer<T>>(`${gw.url}/graphql`, {
    key: token,
    body: { query, variables },
  });
}

/** A hard monthly USD budget of `limit` on the project, set as an admin through the gateway's GraphQL. */
export async function hardBudget(gatewayUrl: string, projectId: string, limit: string): Promise<void> {
  const res = await http<GraphqlAnswer<GraphqlData>>(`${gatewayUrl}/graphql`, {
    key: ADMIN,
    body: {
      query: `mutation ($p: ID!, $l: Decimal!) { setBudget(projectId: $p, unit: USD, limit: $l, period: MONTHLY, hard: true) }`,
      variables: { p: projectId, l: limit },
    },
  });
  if (res.status !== 200 || res.body.errors) throw new Error(`setBudget refused: ${res.text}`);
}

/** Polls `check` until it returns a truthy value (which it resolves with) or the time runs out. */
export async function eventually<T>(
  check: () => Promise<T>,
  timeoutMs = 10_000,
  everyMs = 50,
): Promise<NonNullable<T>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export async function sql<R extends pg.QueryResultRow = Row>(
  gw: Gateway,
  text: string,
  values?: unknown[],
): Promise<R[]> {
  return (await gw.db.query<R>(text, values)).rows;
}

export interface ChildGateway {
  url: string;
  proc: import('node:child_process').ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** The real `npm start` entry point (dist/src/main.js) as a child process, for kill and log tests. */
export async function spawnGateway(env: Record<string, string>): Promise<ChildGateway> {
  const { spawn } = await import('node:child_process');
  const { freePort } = await import('../../src/database/embedded.js');
  const port = await freePort();
  let out = '';
  const proc = spawn(process.execPath, ['dist/src/main.js'], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      PORT: String(port),
      LOG_LEVEL: 'info',
      POLL_INTERVAL_MS: '100',
      NODE_ENV: 'test',
      AUTH_FAILURES_PER_MINUTE: '1000000',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  await eventually(
    async () => {
      if (proc.exitCode !== null) throw new Error(`gateway exited: ${out}`);
      return fetch(`${url}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
    },
    30_000,
    100,
  );
  return { url, proc, output: () => out, exited };
}
