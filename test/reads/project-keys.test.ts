/**
 * `projects { apiKeys }`, which the console asks on every load (the project picker and the keys'
 * names): every listed project's keys come from one query, not one per project. Counted by
 * PostgreSQL itself (pg_stat_statements, on a server of this test's own), through the real GraphQL edge.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Gateway } from '../../src/bootstrap.js';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/database/embedded.js';
import { migrate } from '../../src/database/migrate.js';
import { ProjectsService } from '../../src/projects/projects.service.js';
import { ADMIN, gateway, graphql } from '../support/harness.js';

const PROJECTS = 12;
let dir: string;
let server: EmbeddedDatabase;
let gw: Gateway;
let stats: pg.Client;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'spendgate-keys-'));
  server = await startEmbeddedPostgres({
    dataDir: dir,
    settings: ['fsync=off', 'shared_preload_libraries=pg_stat_statements', 'pg_stat_statements.track=all'],
  });
  await migrate(server.url);
  stats = new pg.Client({ connectionString: server.url });
  await stats.connect();
  await stats.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  gw = await gateway(server.url);
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await stats?.end();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** How many times statements that read api_key by project ran since the last reset. */
async function keyReadsByProject(): Promise<number> {
  const { rows } = await stats.query<{ calls: string }>(
    `SELECT coalesce(sum(calls), 0)::text AS calls FROM pg_stat_statements
     WHERE query ILIKE '%FROM api_key%' AND query ILIKE '%project_id%' AND query NOT ILIKE '%pg_stat_statements%'`,
  );
  return Number(rows[0]!.calls);
}

test("a list of projects reads every project's keys in one query, each project's newest first", async () => {
  const projects = new ProjectsService(gw.db);
  const made: { id: string; keys: string[] }[] = [];
  for (let i = 0; i < PROJECTS; i++) {
    const project = await projects.create(`keys-${i}`);
    const keys: string[] = [];
    // Some projects with no key, some with several.
    for (let k = 0; k < i % 3; k++)
      keys.unshift((await projects.issueKey(project.id, [], { name: `k${k}` })).slice(3, 15));
    made.push({ id: project.id, keys });
  }
  await stats.query('SELECT pg_stat_statements_reset()');
  const res = await graphql<{ projects: { id: string; apiKeys: { prefix: string; name: string }[] }[] }>(
    gw,
    ADMIN,
    '{ projects { id name apiKeys { prefix name } } }',
  );
  expect(res.status).toBe(200);
  expect(res.body.errors).toBeUndefined();
  for (const { id, keys } of made) {
    const listed = res.body.data!.projects.find((p) => p.id === id)!;
    expect(listed.apiKeys.map((k) => k.prefix)).toEqual(keys);
  }
  // Before, one query per listed project: 12 here.
  expect(await keyReadsByProject()).toBe(1);
});
