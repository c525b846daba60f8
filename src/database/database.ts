/**
 * One pg pool shared by the Prisma client (through @prisma/adapter-pg) and the few hot-path
 * statements that call the ledger's SQL functions directly. A second, read-only one serves the
 * reports when REPORTS_DATABASE_URL points them at a replica.
 */
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from '../generated/prisma/client.js';

export class Database {
  readonly pool: pg.Pool;
  readonly prisma: PrismaClient;

  /**
   * `readOnly`: every transaction on these connections is read-only, so a reports URL that names
   * the primary by mistake still cannot write (a replica refuses writes on its own).
   */
  constructor(url: string, poolSize: number, { readOnly = false }: { readOnly?: boolean } = {}) {
    this.pool = new pg.Pool({
      connectionString: url,
      max: poolSize,
      idleTimeoutMillis: 30_000,
      ...(readOnly ? { options: '-c default_transaction_read_only=on' } : {}),
    });
    // A dropped connection (database restart) must not crash the process; the pool reconnects.
    this.pool.on('error', () => {});
    this.prisma = new PrismaClient({ adapter: new PrismaPg(this.pool) });
  }

  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>> {
    return this.pool.query<R>(text, values);
  }

  /**
   * A named (prepared) statement: parsed and planned once per connection instead of on every
   * call. For the statements on the submission path, which run thousands of times a second.
   */
  prepared<R extends pg.QueryResultRow = pg.QueryResultRow>(name: string, text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    return this.pool.query<R>({ name, text, values });
  }

  /** Rows as arrays in column order: cheaper than one object per row for large results (reports). */
  async queryArrays(text: string, values?: unknown[]): Promise<unknown[][]> {
    return (await this.pool.query<unknown[]>({ text, values, rowMode: 'array' })).rows;
  }

  /** Runs `fn` in one transaction on one connection: COMMIT when it resolves, ROLLBACK when it throws. */
  async transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  async close(): Promise<void> {
    await this.prisma.$disconnect().catch(() => {});
    await this.pool.end().catch(() => {});
  }
}

export const DATABASE = Symbol('DATABASE');
/** Where reports and the dashboard read: REPORTS_DATABASE_URL's pool, or DATABASE itself. */
export const REPORTS_DATABASE = Symbol('REPORTS_DATABASE');
