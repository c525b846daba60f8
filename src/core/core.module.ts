/**
 * Shared services every domain uses: configuration, the database, the upstream client, the price
 * book, projects and keys, the ledger, settlement, metrics, the audit trail, people and who is
 * calling. Global, so domain modules stay small.
 */
import { Global, Module, type DynamicModule } from '@nestjs/common';
import { CacheEvents } from '../common/cache-events.js';
import { CONFIG } from '../config/config.js';
import { DATABASE, READS_DATABASE, REPORTS_DATABASE } from '../database/database.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { TracingService } from '../telemetry/tracing.service.js';
import { LedgerService } from '../ledger/ledger.service.js';
import { PriceBookService } from '../pricing/price-book.service.js';
import { ProjectPolicies } from '../projects/project-policies.js';
import { ProjectsService } from '../projects/projects.service.js';
import { BudgetStatusService } from '../budgets/budget-status.service.js';
import { BudgetsService } from '../budgets/budgets.service.js';
import { PrincipalsService } from '../auth/principals.service.js';
import { ReportsService } from '../reports/reports.service.js';
import { ReportCache } from '../report-cache/report-cache.service.js';
import { PollerService } from '../tasks/poller.service.js';
import { SettlementService } from '../tasks/settlement.service.js';
import { TaskStore } from '../tasks/task-store.js';
import { UpstreamService } from '../upstream/upstream.service.js';
import { AuditService } from '../audit/audit.service.js';
import { ChangesService } from '../audit/changes.service.js';
import { AuthFailures } from '../auth/auth-failures.js';
import { AUDIT_SINK } from '../auth/audit-sink.js';
import { PeopleService } from '../people/people.service.js';
import { TokensService } from '../people/tokens.service.js';
import type { Runtime } from './runtime.js';

const SHARED = [
  CacheEvents,
  PriceBookService,
  ProjectsService,
  ProjectPolicies,
  LedgerService,
  SettlementService,
  TaskStore,
  MetricsService,
  TracingService,
  PollerService,
  BudgetsService,
  BudgetStatusService,
  PrincipalsService,
  ReportsService,
  ReportCache,
  AuditService,
  ChangesService,
  AuthFailures,
  PeopleService,
  TokensService,
];

@Global()
@Module({})
export class CoreModule {
  static forRoot(runtime: Runtime): DynamicModule {
    return {
      module: CoreModule,
      providers: [
        { provide: CONFIG, useValue: runtime.config },
        { provide: DATABASE, useValue: runtime.db },
        { provide: READS_DATABASE, useValue: runtime.readsDb },
        { provide: REPORTS_DATABASE, useValue: runtime.reportsDb },
        { provide: UpstreamService, useFactory: () => new UpstreamService(runtime.upstream) },
        // auth writes its audit records through this (auth/audit-sink.ts): the trail stands on auth.
        { provide: AUDIT_SINK, useExisting: AuditService },
        ...SHARED,
      ],
      exports: [CONFIG, DATABASE, READS_DATABASE, REPORTS_DATABASE, UpstreamService, AUDIT_SINK, ...SHARED],
    };
  }
}
