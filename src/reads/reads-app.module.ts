/**
 * The reads worker's application: GraphQL (queries and the admin mutations) and CSV reports. It
 * runs on its own thread and event loop (reads.worker.ts); the main thread forwards these paths
 * to it (reads-thread.ts).
 */
import { Module, type DynamicModule } from '@nestjs/common';
import { GraphQLModule } from '@nestjs/graphql';
import { MercuriusDriver, type MercuriusDriverConfig } from '@nestjs/mercurius';
import type { Runtime } from '../core/runtime.js';
import { AuditService } from '../audit/audit.service.js';
import { AuthModule } from '../auth/auth.module.js';
import { AuthFailures } from '../auth/auth-failures.js';
import { PeopleModule } from '../people/people.module.js';
import { AuditModule } from '../audit/audit.module.js';
import { ClosingModule } from '../closing/closing.module.js';
import { CommitmentsModule } from '../commitments/commitments.module.js';
import { ContractsModule } from '../contracts/contracts.module.js';
import { CurrencyModule } from '../currency/currency.module.js';
import { LimitsModule } from '../limits/limits.module.js';
import { HistoryModule } from '../history/history.module.js';
import { EarlyWarningModule } from '../early-warning/early-warning.module.js';
import { BookMetricsModule } from '../book-metrics/book-metrics.module.js';
import { VendorStatementsModule } from '../vendor-statements/vendor-statements.module.js';
import { Callers } from '../auth/callers.js';
import { TargetLookups } from '../auth/target-lookups.js';
import { CoreModule } from '../core/core.module.js';
import { GraphqlApiModule } from './graphql-api.module.js';
import { callContext } from '../auth/callers.js';
import { depthLimit, fieldLimit } from '../graphql/limits.js';
import { errorFormatter } from '../graphql/error-format.js';
import { DateTimeScalar } from '../graphql/scalars.js';
import { operationGuard } from '../graphql/operation-guard.js';
import { withPlainFieldReads } from '../graphql/plain-fields.js';
import { ReportsController } from '../reports/reports.controller.js';

@Module({})
export class ReadsAppModule {
  static forRoot(runtime: Runtime): DynamicModule {
    return {
      module: ReadsAppModule,
      imports: [
        CoreModule.forRoot(runtime),
        AuthModule,
        GraphqlApiModule,
        PeopleModule,
        AuditModule,
        ClosingModule,
        CommitmentsModule,
        ContractsModule,
        CurrencyModule,
        LimitsModule,
        HistoryModule,
        EarlyWarningModule,
        BookMetricsModule,
        VendorStatementsModule,
        GraphQLModule.forRootAsync<MercuriusDriverConfig>({
          driver: MercuriusDriver,
          imports: [AuthModule],
          inject: [Callers, TargetLookups, AuditService, AuthFailures],
          useFactory: (callers: Callers, lookups: TargetLookups, audit: AuditService, failures: AuthFailures) => ({
            autoSchemaFile: true,
            // One DateTime, the strict one (graphql/scalars.ts), for every Date field.
            buildSchemaOptions: { scalarsMap: [{ type: Date, scalar: DateTimeScalar }] },
            sortSchema: true,
            transformSchema: withPlainFieldReads,
            graphiql: false, // served by the main thread from local files (console/web-pages.ts)
            path: '/graphql',
            context: callContext,
            validationRules: [depthLimit, fieldLimit],
            hooks: {
              preExecution: operationGuard(callers, lookups, audit, failures, runtime.config.NODE_ENV === 'production'),
            },
            errorFormatter,
            // A query is compiled by graphql-jit on its second run. Decimal arguments arrive as text
            // (graphql/scalars.ts), so an inline literal means the same compiled or not.
            jit: 1,
          }),
        }),
      ],
      controllers: [ReportsController],
    };
  }
}
