/**
 * The real system the money model is checked against: its own embedded PostgreSQL (so that a
 * fault can restart it), a fresh database per run, one vendor (the simulator, tasks processing
 * until a command decides their fate) and two gateway instances on that database, polled by
 * clients only (the background poller is off, so what settles, and when, is the sequence's).
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startGateway, type Gateway } from '../../src/bootstrap.js';
import { freePort, startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/database/embedded.js';
import { migrate } from '../../src/database/migrate.js';
import { ProjectsService } from '../../src/projects/projects.service.js';
import { createSimulator, type Simulator } from '../../src/simulator/simulator.js';

export const ADMIN = 'model-admin-token-0123456789';
const VENDOR_KEY = 'vk-model-0123456789';
// fsync off is safe here (a fault kills PostgreSQL, not the machine); synchronous_commit stays on:
// off, an immediate shutdown loses commits a client was told about, which no product could survive.
// Its server's zone is not UTC (a Debian server takes its machine's): Chatham, +13:45 in its summer
// and +12:45 in its winter, a quarter hour off every UTC hour, its day ahead of UTC's from 10:15 (or
// 11:15) UTC on. The books' days, months and hours must not depend on it (§16, src/database/utc.ts).
const SERVER_ZONE = 'Pacific/Chatham';
const SETTINGS = ['fsync=off', 'full_page_writes=off', 'max_connections=300', `timezone=${SERVER_ZONE}`];
/** MONEY_PG_LOG=<file>: the server's log appended there (why a start or a connection failed). */
const pgLog = process.env.MONEY_PG_LOG
  ? { log: (line: string) => appendFileSync(process.env.MONEY_PG_LOG!, `${new Date().toISOString()} ${line}\n`) }
  : {};

/** One PostgreSQL for a process: runs get a database each. */
export class Server {
  private constructor(
    private db: EmbeddedDatabase,
    readonly dir: string,
    readonly port: number,
  ) {}

  static async start(): Promise<Server> {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'spendgate-model-'));
    const port = await freePort();
    return new Server(await startEmbeddedPostgres({ dataDir: dir, port, settings: SETTINGS, ...pgLog }), dir, port);
  }

  get url(): string {
    return this.db.url;
  }

  /** Drops a run's database (its gateways closed): a long soak or shrink leaves no disk behind. */
  async dropDatabase(url: string): Promise<void> {
    await this.onServer(`DROP DATABASE IF EXISTS ${new URL(url).pathname.slice(1)} WITH (FORCE)`);
  }

  async freshDatabase(): Promise<string> {
    const name = `m_${randomBytes(6).toString('hex')}`;
    await this.onServer(`CREATE DATABASE ${name}`);
    const url = new URL(this.url);
    url.pathname = `/${name}`;
    await migrate(url.toString());
    return url.toString();
  }

  /** One statement on the server's own database, its connection ended whatever the statement does. */
  private async onServer(statement: string): Promise<void> {
    const client = new pg.Client({ connectionString: this.url });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  }

  /** A fault: an immediate shutdown (as a crash leaves it), `downMs` away, then started again. */
  async restart(downMs: number): Promise<void> {
    const pid = Number(readFileSync(path.join(this.dir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
    process.kill(pid, 'SIGQUIT');
    // Until it is gone: a start while it lives would take it for a running server and start none,
    // leaving every later sequence without a database once it exits.
    for (let i = 0; i < 2400 && alive(pid); i++) await new Promise((r) => setTimeout(r, 25));
    if (alive(pid)) throw new Error(`PostgreSQL (pid ${pid}) still running 60 s after SIGQUIT`);
    await new Promise((r) => setTimeout(r, downMs));
    this.db = await startEmbeddedPostgres({ dataDir: this.dir, port: this.port, settings: SETTINGS, ...pgLog });
    if (!this.db.owned) throw new Error('PostgreSQL restarted: the old server was found running, none started');
  }

  async stop(): Promise<void> {
    await this.db.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export interface System {
  url: string;
  sim: Simulator;
  simUrl: string;
  gateways: Gateway[];
  projects: Array<{ id: string; name: string; key: string }>;
  /** a project of tasks dated last month (no budgets: closes and late items, §13) */
  past: { id: string };
  /** service accounts' tokens: finance and viewer on every project, lead on alpha (§11) */
  roles: Record<'FINANCE' | 'LEAD' | 'VIEWER', string>;
  /** the environment a gateway of this system starts with (a fault replaces one) */
  gatewayEnv(): NodeJS.ProcessEnv;
  /** where its instances archive months (§18) */
  archiveDir: string;
  close(): Promise<void>;
}

export async function startSystem(server: Server): Promise<System> {
  const url = await server.freshDatabase();
  const sim = createSimulator({ apiKey: VENDOR_KEY, delayMs: 3_600_000 });
  const simUrl = await sim.app.listen({ port: 0, host: '127.0.0.1' });
  // One directory for the system's archives (§18), shared by its instances; removed with the server's.
  const archiveDir = mkdtempSync(path.join(server.dir, 'archive-'));
  const env = (): NodeJS.ProcessEnv => ({
    DATABASE_URL: url,
    DATA_DIR: mkdtempSync(path.join(server.dir, 'gw-')), // removed with the server's directory
    PORT: '0',
    LOG_LEVEL: 'silent',
    ADMIN_TOKEN: ADMIN,
    UPSTREAM_BASE_URL: simUrl,
    ARCHIVE_DIR: archiveDir,
    UPSTREAM_API_KEY: VENDOR_KEY,
    UPSTREAM_TIMEOUT_MS: '2000',
    UPSTREAM_CONNECT_TIMEOUT_MS: '500',
    // A submission is abandoned 2.5 s after its gateway's last sign of life (kill-commands.ts waits that out).
    SUBMIT_GRACE_MS: '0',
    POLLER_ENABLED: 'false',
    POLL_INTERVAL_MS: '600000', // a task polled in a round is not due again in it (poller-commands.ts)
    TASK_NOT_FOUND_AFTER_MS: '0', // three "not found" polls make a task unknown, however quick
    LEDGER_SEAL_MS: '0',
    EARLY_WARNING_MS: '0',
    METRICS_NEW_SERIES_MS: '0', // a new series shows its amount at once: the invariants compare every scrape
    WEBHOOKS_ENABLED: 'false',
    NODE_ENV: 'test',
    AUTH_FAILURES_PER_MINUTE: '1000000',
  });
  const gateways = [await startGateway(env()), await startGateway(env())];
  const service = new ProjectsService(gateways[0]!.db);
  const projects = [];
  for (const name of ['alpha', 'beta']) {
    const p = await service.create(name);
    projects.push({ id: p.id, name, key: await service.issueKey(p.id, name === 'beta' ? ['team=b'] : []) });
  }
  const past = { id: (await service.create('past')).id };
  const roles = {
    FINANCE: await serviceToken(gateways[0]!.url, 'FINANCE', null),
    LEAD: await serviceToken(gateways[0]!.url, 'LEAD', [projects[0]!.id]),
    VIEWER: await serviceToken(gateways[0]!.url, 'VIEWER', null),
  };
  return {
    url,
    sim,
    simUrl,
    gateways,
    projects,
    past,
    roles,
    gatewayEnv: env,
    archiveDir,
    async close() {
      await Promise.all(gateways.map((g) => g.close()));
      await sim.app.close();
      // Only disk is at stake: a failed drop must not hide the run's own report.
      await server.dropDatabase(url).catch(() => undefined);
      rmSync(archiveDir, { recursive: true, force: true });
    },
  };
}

/** A service account with `role` (on every project, or on those named) and a token of it. */
async function serviceToken(url: string, role: string, projectIds: string[] | null): Promise<string> {
  const ask = async (query: string, variables: Record<string, unknown>) => {
    const res = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as { data?: Record<string, Record<string, unknown>>; errors?: unknown };
    if (body.errors) throw new Error(`${role}: ${JSON.stringify(body.errors)}`);
    return body.data!;
  };
  const account = await ask(
    `mutation($n: String!, $r: Role!, $p: [ID!]) { createServiceAccount(name: $n, role: $r, projectIds: $p) { id } }`,
    { n: `model ${role.toLowerCase()}`, r: role, p: projectIds },
  );
  const token = await ask(`mutation($s: ID!) { createToken(name: "model", serviceAccountId: $s) { secret } }`, {
    s: account.createServiceAccount!.id,
  });
  return token.createToken!.secret as string;
}

/** Whether a process still runs. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
