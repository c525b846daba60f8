/**
 * The embedded mode on a PostgreSQL installed on the machine instead of the npm package's: when
 * POSTGRES_BIN_DIR names a server's binaries (Debian's `postgresql-15`: /usr/lib/postgresql/15/bin),
 * DATA_DIR's cluster is made by its `initdb` and run by its `pg_ctl`, with the same layout, user,
 * password and settings as the packaged server. It is how the money and concurrency suites run on
 * PostgreSQL 15 as well as on the embedded 18 (`npm run test:pg15`, decisions §17).
 *
 * PostgreSQL refuses to run as root: as root, both run as the `postgres` account (which Debian's
 * package makes), and the cluster's folder is handed to it.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface SystemPostgres {
  stop(): Promise<void>;
}

interface Account {
  uid: number;
  gid: number;
}

/** Runs a binary of binDir, as `postgres` when this process is root. */
async function asServerUser(binDir: string, binary: string, args: string[], account: Account | undefined) {
  const file = path.join(binDir, binary);
  if (!existsSync(file))
    throw new Error(
      `POSTGRES_BIN_DIR ${binDir}: no ${binary} there (install the server, e.g. apt-get install postgresql-15)`,
    );
  const [command, argv] = account ? ['runuser', ['-u', 'postgres', '--', file, ...args]] : [file, args];
  return run(command, argv, { maxBuffer: 16 * 1024 * 1024 });
}

export async function startSystemPostgres(options: {
  binDir: string;
  clusterDir: string;
  user: string;
  password: string;
  port: number;
  settings: string[];
  account: Account | undefined;
}): Promise<SystemPostgres> {
  const { binDir, clusterDir, user, password, port, settings, account } = options;
  if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) {
    await mkdir(clusterDir, { recursive: true, mode: 0o700 });
    const pwfile = path.join(path.dirname(clusterDir), '.initdb-password');
    await writeFile(pwfile, `${password}\n`, { mode: 0o600 });
    if (account) {
      await chown(clusterDir, account.uid, account.gid);
      await chown(pwfile, account.uid, account.gid);
    }
    try {
      await asServerUser(
        binDir,
        'initdb',
        ['-D', clusterDir, '-U', user, `--pwfile=${pwfile}`, '--auth=scram-sha-256', '-E', 'UTF8', '--locale=C'],
        account,
      );
    } finally {
      await rm(pwfile, { force: true });
    }
  }
  // pg_ctl hands -o to a shell: a value with spaces (a standby's primary_conninfo) is quoted.
  const quoted = (setting: string) =>
    setting.replace(/=(.*\s.*)$/, (_all, value: string) => `='${value.replaceAll("'", "'\\''")}'`);
  const serverOptions = [`-c port=${port}`, ...settings.map((s) => `-c ${quoted(s)}`)].join(' ');
  await asServerUser(
    binDir,
    'pg_ctl',
    ['-D', clusterDir, '-l', path.join(clusterDir, 'server.log'), '-o', serverOptions, '-w', '-t', '60', 'start'],
    account,
  );
  return {
    stop: async () => {
      await asServerUser(binDir, 'pg_ctl', ['-D', clusterDir, '-m', 'fast', '-w', 'stop'], account).catch(() => {});
    },
  };
}
