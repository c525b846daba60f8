/**
 * A pg pool. The gateway keeps three:
 * the primary's, which the submission path and every money movement use; a small read-only one
 * on the primary for GraphQL's task and budget reads; and a small read-only one for reports (on
 * REPORTS_DATABASE_URL when set). The read pools are the bulkhead: a heavy read waits for one of
 * their few connections and is cut off by their statement timeout, and never takes a connection
 * the submission path needs.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { setPriority } from 'node:os';
import pg from 'pg';
import { UTC_SESSION } from './utc.js';

/** Every cell as its text (queryTexts). */
const AS_SENT = { getTypeParser: () => (text: string) => text } as unknown as pg.CustomTypesConfig;

/**
 * How often a backend running a statement for a write pool checks that its client is still there
 * (PostgreSQL's client_connection_check_interval, 14 and later): once a connection breaks, its
 * statement has committed or is aborted within this long.
 */
export const CLIENT_CHECK_INTERVAL_MS = 1_000;

/** The transaction a piece of work runs in (Database.inTransaction), and what waits for its commit. */
interface Transaction {
  client: pg.PoolClient;
  afterCommit: Array<() => Promise<void> | void>;
}

export class Database {
  readonly pool: pg.Pool;
  /**
   * The transaction of the async context, if any: every query made while it runs joins it, so a
   * change and its audit record commit together (audit/changes.service.ts) without each service taking a
   * client as an argument.
   */
  private readonly current = new AsyncLocalStorage<Transaction>();

  /**
   * `readOnly`: every transaction on these connections is read-only, so a reports URL that names
   * the primary by mistake still cannot write (a replica refuses writes on its own). `nice`: when
   * the database runs on this machine (the embedded one, or a local server), its backends serving
   * this pool run at this lower CPU priority, so reads leave the cores to submissions (decisions §5: no read starves
   * submissions).
   */
  constructor(
    url: string,
    poolSize: number,
    {
      readOnly = false,
      statementTimeoutMs,
      applicationName = 'spendgate',
      nice,
    }: { readOnly?: boolean; statementTimeoutMs?: number; applicationName?: string; nice?: number } = {},
  ) {
    const options = [
      // Days, months and hours in UTC whatever the server's TimeZone (utc.ts).
      ...UTC_SESSION,
      // A pool that writes moves money in short statements: PostgreSQL's JIT (on in distributions'
      // builds, such as Debian's 15) would compile each one whose estimate looks large, ~17 ms a time
      // (a skewed statistic made reconcile 30x slower on 15). Reads keep it for long reports.
      ...(readOnly ? ['-c default_transaction_read_only=on'] : ['-c jit=off']),
      // A statement whose client is gone (a failover cut the connection) is aborted instead of
      // committing unseen, within this interval (gateway/unsent-holds.ts relies on it).
      ...(readOnly ? [] : [`-c client_connection_check_interval=${CLIENT_CHECK_INTERVAL_MS}`]),
      ...(statementTimeoutMs ? [`-c statement_timeout=${Math.floor(statementTimeoutMs)}`] : []),
    ];
    this.pool = new pg.Pool({
      connectionString: url,
      max: poolSize,
      idleTimeoutMillis: 30_000,
      // Named, so an operator sees in pg_stat_activity which pool a connection belongs to.
      application_name: applicationName,
      ...(options.length ? { options: options.join(' ') } : {}),
      // Awaited by the pool before the connection serves its first query (pg-pool's onConnect).
      ...(nice !== undefined && isLocal(url)
        ? { onConnect: (client: pg.PoolClient) => lowerBackendPriority(client, nice) }
        : {}),
    } as pg.PoolConfig);
    // A dropped connection (database restart) must not crash the process; the pool reconnects.
    this.pool.on('error', () => {});
  }

  /** Where a statement runs: the transaction of this context (inTransaction), else any pooled connection. */
  private get runner(): pg.Pool | pg.PoolClient {
    return this.current.getStore()?.client ?? this.pool;
  }

  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>> {
    return this.runner.query<R>(text, values);
  }

  /**
   * A named (prepared) statement: parsed and planned once per connection instead of on every
   * call. For the statements on the submission path, which run thousands of times a second.
   */
  prepared<R extends pg.QueryResultRow = pg.QueryResultRow>(
    name: string,
    text: string,
    values: unknown[],
  ): Promise<pg.QueryResult<R>> {
    return this.runner.query<R>({ name, text, values });
  }

  /** Whether the server answers (readiness probes): resolves or throws the driver's error. */
  async ping(): Promise<void> {
    await this.runner.query('SELECT 1');
  }

  /** Whether the server answers and takes writes: false on a standby (decisions §17). */
  async writable(): Promise<boolean> {
    const { rows } = await this.runner.query<{ standby: boolean; readOnly: string }>(
      'SELECT pg_is_in_recovery() AS standby, current_setting(\'transaction_read_only\') AS "readOnly"',
    );
    return !rows[0]!.standby && rows[0]!.readOnly === 'off';
  }

  /** Rows as arrays in column order: cheaper than one object per row for large results (reports). */
  async queryArrays(text: string, values?: unknown[]): Promise<unknown[][]> {
    return (await this.runner.query<unknown[]>({ text, values, rowMode: 'array' })).rows;
  }

  /**
   * Rows as arrays of each cell's text as PostgreSQL sent it (NULL as null), with no type parsing:
   * for a large result read as text anyway. pg's parsers cost a 9,000-row report 5 of its 16 ms
   * (a regular expression for every bigint cell, parseInt for every int; bench/FINDINGS.md).
   */
  async queryTexts(text: string, values?: unknown[]): Promise<Array<Array<string | null>>> {
    const query = { text, values, rowMode: 'array' as const, types: AS_SENT };
    return (await this.runner.query<Array<string | null>>(query)).rows;
  }

  /**
   * Every row of a query (as arrays in column order), given to `onPage` a page at a time through a
   * cursor of this context's transaction (one is begun when there is none): a result of any size
   * in bounded memory. A month's ledger (a statement's digest) can be millions of entries; read at
   * once it took ~750 MB of heap a million, and 8 million ran a close out of memory (bench/FINDINGS.md).
   * Answers how many rows there were.
   */
  async eachPage(
    text: string,
    values: unknown[],
    onPage: (rows: unknown[][]) => void | Promise<void>,
    pageRows = PAGE_ROWS,
  ): Promise<number> {
    return this.transaction(async (client) => {
      const cursor = `spendgate_pages_${++cursors}`;
      // Every row is read, so plan for all of them: at the default (0.1) PostgreSQL planned a
      // project's month as a scan of the whole month's key index, filtered, instead of its own
      // entries sorted: 50 projects' month digests took twice as long (bench/FINDINGS.md).
      await client.query('SET LOCAL cursor_tuple_fraction = 1');
      await client.query(`DECLARE ${cursor} NO SCROLL CURSOR FOR ${text}`, values);
      let rows = 0;
      for (;;) {
        const page = await client.query<unknown[]>({ text: `FETCH ${pageRows} FROM ${cursor}`, rowMode: 'array' });
        if (page.rows.length === 0) break;
        rows += page.rows.length;
        await onPage(page.rows);
      }
      await client.query(`CLOSE ${cursor}`);
      return rows;
    });
  }

  /**
   * Runs `fn` in one transaction on one connection: COMMIT when it resolves, ROLLBACK when it
   * throws. Inside another transaction of this context, `fn` joins it (one commit for both).
   */
  async transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const joined = this.current.getStore();
    if (joined) return fn(joined.client);
    return this.inTransaction(() => fn(this.current.getStore()!.client));
  }

  /**
   * Runs `fn` in a transaction that every query of its async context joins (query, prepared,
   * transaction, and the services that use them). After COMMIT, the work `afterCommit` queued runs
   * (telling caches of the change, which must not see it before it is committed).
   */
  async inTransaction<T>(fn: () => Promise<T>): Promise<T> {
    if (this.current.getStore()) return fn();
    const client = await this.pool.connect();
    const tx: Transaction = { client, afterCommit: [] };
    // Checked out, a connection has no listener for its 'error' event (pg-pool removes the idle
    // one): one that dies between two statements (a restart, a failover) would end the process.
    // Its next statement fails instead, and it is not given back to the pool.
    let lost: Error | undefined;
    const onLost = (error: Error) => {
      lost = error;
    };
    client.on('error', onLost);
    let result: T;
    try {
      await client.query('BEGIN');
      result = await this.current.run(tx, fn);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      // A server that became a standby refuses writes on this connection for good: not given back.
      if ((error as { code?: string }).code === READ_ONLY_SERVER) lost ??= error as Error;
      throw error;
    } finally {
      client.removeListener('error', onLost);
      client.release(lost);
    }
    for (const work of tx.afterCommit) await work();
    return result;
  }

  /** Work for after the current transaction commits; at once when there is none. */
  async afterCommit(work: () => Promise<void> | void): Promise<void> {
    const tx = this.current.getStore();
    if (tx) tx.afterCommit.push(work);
    else await work();
  }

  async close(): Promise<void> {
    await this.pool.end().catch(() => {});
  }
}

/** Rows a page of eachPage: ~7 MB of a month's ledger entries as text arrays. */
const PAGE_ROWS = 10_000;
/** Names the cursors of eachPage apart on one connection (a page's work may read another's). */
let cursors = 0;

/** SQLSTATE read_only_sql_transaction: the server is a standby now (or was set read-only). */
const READ_ONLY_SERVER = '25006';

export const DATABASE = Symbol('DATABASE');
/** GraphQL's reads of tasks and budgets: the primary, through the read bulkhead. */
export const READS_DATABASE = Symbol('READS_DATABASE');
/** Where reports and the dashboard read: REPORTS_DATABASE_URL's pool, or DATABASE itself. */
export const REPORTS_DATABASE = Symbol('REPORTS_DATABASE');

function isLocal(url: string): boolean {
  const host = new URL(url).hostname;
  return host === '127.0.0.1' || host === 'localhost' || host === '::1' || host === '[::1]' || host === '';
}

/** Renices the backend process of a new connection; where that is not allowed, nothing changes. */
async function lowerBackendPriority(client: pg.PoolClient, nice: number): Promise<void> {
  try {
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    setPriority(rows[0]!.pid, nice);
  } catch {
    // another user's server, or not Linux: the reads keep normal priority
  }
}
