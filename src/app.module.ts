/** The gateway application: wiring only. Runtime values (config, database, upstream) come from bootstrap. */
import { Module, type DynamicModule } from '@nestjs/common';
import { GraphQLModule } from '@nestjs/graphql';
import { MercuriusDriver, type MercuriusDriverConfig } from '@nestjs/mercurius';
import { CONFIG, type Config } from './config/config.js';
import { Database, DATABASE } from './database/database.js';
import { GatewayModule } from './gateway/gateway.module.js';
import { GraphqlApiModule } from './graphql/graphql-api.module.js';
import { graphqlContext } from './graphql/graphql-auth.js';
import { fieldLimit, MAX_DEPTH } from './graphql/limits.js';
import { HealthController } from './health/health.controller.js';
import { ReportsController } from './reports/reports.controller.js';
import type { UpstreamOptions } from './upstream/upstream.client.js';
import { CoreModule } from './core.module.js';

export interface Runtime {
  config: Config;
  db: Database;
  /** Reports' database: a replica's read-only pool, or `db` itself. */
  reportsDb: Database;
  upstream: UpstreamOptions;
}

@Module({})
export class AppModule {
  static forRoot(runtime: Runtime): DynamicModule {
    return {
      module: AppModule,
      imports: [
        CoreModule.forRoot(runtime),
        GatewayModule,
        GraphqlApiModule,
        GraphQLModule.forRoot<MercuriusDriverConfig>({
          driver: MercuriusDriver,
          autoSchemaFile: true,
          sortSchema: true,
          graphiql: runtime.config.NODE_ENV !== 'production',
          path: '/graphql',
          context: graphqlContext,
          queryDepth: MAX_DEPTH,
          validationRules: [fieldLimit],
          jit: 1,
        }),
      ],
      controllers: [HealthController, ReportsController],
    };
  }
}

export { CONFIG, DATABASE };
