/**
 * The reference HA setup of deploy/ha, started for a test on loopback (decisions §17): one etcd,
 * two Patroni nodes managing Debian's PostgreSQL 15 with deploy/ha/patroni.yml verbatim (what
 * differs per node comes from PATRONI_* variables, as in production), and HAProxy with
 * deploy/ha/haproxy.cfg verbatim in front of them. PostgreSQL refuses to run as root, so when the
 * test runs as root the nodes run as the postgres user (runuser), as the operations guide says.
 *
 * A node can lose its postgres (SIGKILL to the postmaster and its backends: Patroni is left to
 * notice) or die whole (Patroni and postgres, SIGKILL: the machine gone), and be started again
 * on its old data directory, where Patroni rewinds it (pg_rewind) and it rejoins as a standby.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from '../../src/database/embedded.js';
import { eventually } from '../support/harness.js';

export type NodeName = 'node1' | 'node2';
export const NODES: readonly NodeName[] = ['node1', 'node2'];

export interface Member {
  name: NodeName;
  role: string;
  state: string;
  timeline?: number;
  lag?: number | string;
}

interface Node {
  name: NodeName;
  pgPort: number;
  apiPort: number;
  dataDir: string;
  env: Record<string, string>;
  proc?: ChildProcess;
}

const DEPLOY = path.resolve('deploy/ha');
const runAsPostgres = process.getuid?.() === 0;

/** Every process whose parent chain leads to `pid` (from /proc), `pid` included. */
function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  const tree: number[] = [];
  const visit = (p: number) => {
    tree.push(p);
    for (const c of children.get(p) ?? []) visit(c);
  };
  visit(pid);
  return tree;
}

function killAll(pids: number[]): void {
  for (const p of pids) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

export class HaCluster {
  readonly superuserPassword = `su-${randomBytes(8).toString('hex')}`;
  private readonly nodes = new Map<NodeName, Node>();
  private readonly others: ChildProcess[] = [];
  private etcdPort = 0;
  haPort = 0;

  private constructor(readonly dir: string) {}

  /** Starts etcd, both nodes (node1 bootstraps, node2 clones it) and HAProxy; waits for a leader and a sync standby. */
  static async start(): Promise<HaCluster> {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'spendgate-ha-'));
    chmodSync(dir, 0o755);
    const cluster = new HaCluster(dir);
    await cluster.startEtcd();
    const passwords = {
      PATRONI_SUPERUSER_PASSWORD: cluster.superuserPassword,
      PATRONI_REPLICATION_PASSWORD: `rep-${randomBytes(8).toString('hex')}`,
      PATRONI_REWIND_PASSWORD: `rw-${randomBytes(8).toString('hex')}`,
    };
    for (const name of NODES) {
      const home = path.join(dir, name);
      mkdirSync(home);
      if (runAsPostgres) {
        const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
        const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
        chownSync(home, uid, gid);
      }
      const [pgPort, apiPort] = [await freePort(), await freePort()];
      const node: Node = {
        name,
        pgPort,
        apiPort,
        dataDir: path.join(home, 'data'),
        env: {
          PATRONI_NAME: name,
          PATRONI_RESTAPI_LISTEN: `127.0.0.1:${apiPort}`,
          PATRONI_RESTAPI_CONNECT_ADDRESS: `127.0.0.1:${apiPort}`,
          PATRONI_POSTGRESQL_LISTEN: `127.0.0.1:${pgPort}`,
          PATRONI_POSTGRESQL_CONNECT_ADDRESS: `127.0.0.1:${pgPort}`,
          PATRONI_POSTGRESQL_DATA_DIR: path.join(home, 'data'),
          PATRONI_POSTGRESQL_PGPASS: path.join(home, 'pgpass'),
          PATRONI_ETCD_HOST: `127.0.0.1:${cluster.etcdPort}`,
          ...passwords,
        },
      };
      cluster.nodes.set(name, node);
      cluster.startNode(name);
      // node2 clones node1 once node1 leads.
      if (name === 'node1') await eventually(async () => (await cluster.leader()) === 'node1', 60_000, 250);
    }
    await cluster.startHaproxy();
    await cluster.waitHealthy(90_000);
    await cluster.admin('CREATE DATABASE spendgate');
    return cluster;
  }

  /** What every gateway's DATABASE_URL names: HAProxy, which leads to the leader. */
  get url(): string {
    return `postgresql://postgres:${this.superuserPassword}@127.0.0.1:${this.haPort}/spendgate`;
  }

  /** The leader's postgres database, through HAProxy, as the superuser. */
  private get adminUrl(): string {
    return `postgresql://postgres:${this.superuserPassword}@127.0.0.1:${this.haPort}/postgres`;
  }

  async admin(text: string): Promise<void> {
    const client = new pg.Client({ connectionString: this.adminUrl });
    await client.connect();
    try {
      await client.query(text);
    } finally {
      await client.end();
    }
  }

  startNode(name: NodeName): void {
    const node = this.nodes.get(name)!;
    const config = path.join(DEPLOY, 'patroni.yml');
    const out = openSync(path.join(this.dir, `${name}.log`), 'a');
    const envArgs = Object.entries(node.env).map(([k, v]) => `${k}=${v}`);
    node.proc = runAsPostgres
      ? spawn('runuser', ['-u', 'postgres', '--', 'env', ...envArgs, 'patroni', config], {
          stdio: ['ignore', out, out],
        })
      : spawn('patroni', [config], { env: { ...process.env, ...node.env }, stdio: ['ignore', out, out] });
  }

  /** The members as Patroni reports them (from any node that answers). */
  async members(): Promise<Member[]> {
    for (const node of this.nodes.values()) {
      try {
        const res = await fetch(`http://127.0.0.1:${node.apiPort}/cluster`, { signal: AbortSignal.timeout(1_000) });
        if (res.ok) return ((await res.json()) as { members: Member[] }).members;
      } catch {
        // this node is down: ask the other
      }
    }
    return [];
  }

  async leader(): Promise<NodeName | undefined> {
    return (await this.members()).find((m) => m.role === 'leader' && m.state === 'running')?.name;
  }

  /** A running leader and the other node its synchronous standby, streaming. */
  async waitHealthy(timeoutMs = 60_000): Promise<NodeName> {
    return eventually(
      async () => {
        const members = await this.members();
        const leader = members.find((m) => m.role === 'leader' && m.state === 'running');
        const sync = members.find((m) => m.role === 'sync_standby' && ['running', 'streaming'].includes(m.state));
        return leader && sync ? leader.name : undefined;
      },
      timeoutMs,
      250,
    ).catch((error: Error) => {
      throw new Error(`${error.message}: the cluster did not become healthy; logs in ${this.dir}`);
    });
  }

  /** `patronictl switchover` from the leader to the other node, as an operator runs it. */
  switchover(from: NodeName, to: NodeName): void {
    this.patronictl('switchover', '--leader', from, '--candidate', to, '--force');
  }

  /** The cluster's synchronous_mode changed at run time (`patronictl edit-config`), as an operator would. */
  setSynchronous(on: boolean): void {
    this.patronictl('edit-config', '--set', `synchronous_mode=${on}`, '--force');
  }

  private patronictl(...args: string[]): void {
    const dcs = ['-c', path.join(DEPLOY, 'patroni.yml'), '--dcs-url', `etcd://127.0.0.1:${this.etcdPort}`];
    execFileSync('patronictl', [...dcs, ...args], { stdio: 'pipe' });
  }

  private postmasterPid(name: NodeName): number {
    return Number(readFileSync(path.join(this.nodes.get(name)!.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  }

  /** The node's postgres killed (postmaster and backends, SIGKILL); Patroni lives on. */
  killPostgres(name: NodeName): void {
    killAll(processTree(this.postmasterPid(name)));
  }

  /**
   * The standby's WAL receiver stopped (SIGSTOP), or killed with what it had not read yet (the
   * WAL still in flight when a machine dies): a standby that falls behind, as over a slow link. In
   * synchronous mode the leader's commits wait for it meanwhile; in asynchronous mode they go on.
   */
  pauseReplication(name: NodeName, how: 'SIGSTOP' | 'SIGKILL'): void {
    const receivers = processTree(this.postmasterPid(name)).filter((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('walreceiver');
      } catch {
        return false;
      }
    });
    if (receivers.length === 0) throw new Error(`${name} has no WAL receiver`);
    for (const p of receivers) process.kill(p, how);
  }

  /** The whole node killed at once: Patroni and postgres, SIGKILL, as when its machine dies. */
  killNode(name: NodeName): void {
    const node = this.nodes.get(name)!;
    killAll([...processTree(node.proc!.pid!), ...processTree(this.postmasterPid(name))]);
  }

  async stop(): Promise<void> {
    for (const name of NODES) {
      try {
        this.killNode(name);
      } catch {
        // never started, or gone
      }
    }
    for (const p of this.others) p.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 500));
    if (!process.env.HA_KEEP) rmSync(this.dir, { recursive: true, force: true });
  }

  private async startEtcd(): Promise<void> {
    const [client, peer] = [await freePort(), await freePort()];
    this.etcdPort = client;
    const out = openSync(path.join(this.dir, 'etcd.log'), 'a');
    const urls = { client: `http://127.0.0.1:${client}`, peer: `http://127.0.0.1:${peer}` };
    const etcd = spawn(
      'etcd',
      [
        '--name=etcd0',
        `--data-dir=${path.join(this.dir, 'etcd')}`,
        // Patroni 3.0's `etcd:` section speaks etcd's v2 API.
        '--enable-v2=true',
        `--listen-client-urls=${urls.client}`,
        `--advertise-client-urls=${urls.client}`,
        `--listen-peer-urls=${urls.peer}`,
        `--initial-advertise-peer-urls=${urls.peer}`,
        `--initial-cluster=etcd0=${urls.peer}`,
      ],
      { stdio: ['ignore', out, out] },
    );
    this.others.push(etcd);
    await eventually(
      () =>
        fetch(`${urls.client}/health`).then(
          (r) => r.ok,
          () => false,
        ),
      20_000,
      100,
    );
  }

  private async startHaproxy(): Promise<void> {
    this.haPort = await freePort();
    const [n1, n2] = NODES.map((n) => this.nodes.get(n)!);
    const out = openSync(path.join(this.dir, 'haproxy.log'), 'a');
    const haproxy = spawn('haproxy', ['-db', '-f', path.join(DEPLOY, 'haproxy.cfg')], {
      env: {
        ...process.env,
        HA_LISTEN: `127.0.0.1:${this.haPort}`,
        NODE1_PG: `127.0.0.1:${n1!.pgPort}`,
        NODE1_API_HOST: '127.0.0.1',
        NODE1_API_PORT: String(n1!.apiPort),
        NODE2_PG: `127.0.0.1:${n2!.pgPort}`,
        NODE2_API_HOST: '127.0.0.1',
        NODE2_API_PORT: String(n2!.apiPort),
      },
      stdio: ['ignore', out, out],
    });
    this.others.push(haproxy);
    await eventually(
      async () => {
        const client = new pg.Client({ connectionString: this.adminUrl });
        try {
          await client.connect();
          const { rows } = await client.query<{ r: boolean }>('SELECT pg_is_in_recovery() AS r');
          return rows[0]!.r === false;
        } catch {
          return false;
        } finally {
          await client.end().catch(() => {});
        }
      },
      30_000,
      250,
    );
  }
}
