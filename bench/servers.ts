/**
 * The servers the submission benches (bench:gateway, bench:floor) start, each a node process of its
 * own beside the load generator, and what they submit as: a project with a key and budgets.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { BudgetsService } from '../src/budgets/budgets.service.js';
import { Database } from '../src/database/database.js';
import { dec } from '../src/pricing/money.js';
import { ProjectsService } from '../src/projects/projects.service.js';

/** Node processes started for one run; stop() ends them all. */
export class BenchServers {
  private readonly children: ChildProcess[] = [];

  /** `node <args>` with the bench's environment plus `env`; node's own stdout (e.g. --trace-gc) only when asked. */
  start(args: string[], env: Record<string, string> = {}, stdout: 'ignore' | 'inherit' = 'ignore'): ChildProcess {
    const child = spawn(process.execPath, args, {
      env: { ...process.env, ...env },
      stdio: ['ignore', stdout, 'inherit'],
    });
    this.children.push(child);
    return child;
  }

  /** The upstream simulator, answering every submission at once and every task as still running. */
  simulator(port: number): ChildProcess {
    return this.start(['dist/src/cli/main.js', 'simulate', '--port', String(port), '--delay-ms', '600000']);
  }

  /** spendgate in production mode in front of the simulator on `simPort`, the poller off (`env` adds to it). */
  spendgate(port: number, databaseUrl: string, simPort: number, env: Record<string, string> = {}): ChildProcess {
    return this.start(['dist/src/main.js'], {
      PORT: String(port),
      DATABASE_URL: databaseUrl,
      UPSTREAM_BASE_URL: `http://127.0.0.1:${simPort}`,
      UPSTREAM_API_KEY: 'bench-vendor-key',
      ADMIN_TOKEN: 'bench-admin-token-0123456789', // required outside the sandbox
      LOG_LEVEL: 'warn',
      POLLER_ENABLED: 'false',
      NODE_ENV: 'production',
      ...env,
    });
  }

  /** @portkey-ai/gateway, a Node AI gateway that keeps no ledger. */
  portkey(port: number): ChildProcess {
    return this.start(['node_modules/@portkey-ai/gateway/build/start-server.js', `--port=${port}`, '--headless']);
  }

  /** Ends every server; they go before their database does. */
  async stop(): Promise<void> {
    this.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1500));
  }

  /** Signals every server at once (SIGKILL when the bench itself is failing). */
  kill(signal: NodeJS.Signals): void {
    for (const child of this.children) child.kill(signal);
  }
}

/** Waits until `url` answers below 500 (30 s at most). */
export async function waitFor(url: string, init?: RequestInit): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const ok = await fetch(url, init).then(
      (r) => r.status < 500,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up`);
}

/** A project with an API key and hard monthly budgets in both units, far above what a run spends. */
export async function benchProject(databaseUrl: string, name: string): Promise<{ projectId: string; key: string }> {
  const db = new Database(databaseUrl, 2);
  try {
    const projects = new ProjectsService(db);
    const project = await projects.create(name);
    const key = await projects.issueKey(project.id);
    const budgets = new BudgetsService(db);
    for (const unit of ['CREDITS', 'USD'] as const)
      await budgets.set({ projectId: project.id, unit, limit: dec('1000000000'), period: 'MONTHLY', hard: true });
    return { projectId: project.id, key };
  } finally {
    await db.close();
  }
}

/** What the submission benches send: a chat request (its hold an estimate of 256 output tokens)… */
export const CHAT = JSON.stringify({
  model: 'gpt-5.6-luna',
  messages: [{ role: 'user', content: 'Summarise the quarterly report in three bullet points.' }],
  max_tokens: 256,
});
/** …and a mix of media requests (exact prices). */
export const MEDIA = [
  JSON.stringify({ model: 'seedream-4.0', prompt: 'a lighthouse at dusk', resolution: '2K', n: 2 }),
  JSON.stringify({ model: 'sora-2-pro', prompt: 'waves on rocks', duration: 15 }),
  JSON.stringify({ model: 'happyhorse-1.0', prompt: 'a horse running' }),
  JSON.stringify({ model: 'nano-banana-pro', prompt: 'a fox', resolution: '4K' }),
];
