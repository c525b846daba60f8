/** What a gateway process hands its Nest modules: configuration, database pools, the upstream. */
import type { Config } from '../config/config.js';
import type { Database } from '../database/database.js';
import type { UpstreamOptions } from '../upstream/upstream.types.js';

export interface Runtime {
  config: Config;
  db: Database;
  /** GraphQL's task and budget reads: read-only, few connections, statement timeout. The main thread has none: `db`. */
  readsDb: Database;
  /** Reports' database: a read-only pool on REPORTS_DATABASE_URL (a replica) or on the primary. */
  reportsDb: Database;
  upstream: UpstreamOptions;
}
