import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { TaskReadsService } from './task-reads.service.js';
import { BudgetsResolver } from './budgets.resolver.js';
import { PriceBookResolver } from './price-book.resolver.js';
import { ProjectsResolver } from './projects.resolver.js';
import { DecimalScalar } from './scalars.js';
import { LedgerResolver } from './ledger.resolver.js';
import { ReportsResolver } from './reports.resolver.js';
import { TasksResolver } from './tasks.resolver.js';
import { WebhooksResolver } from './webhooks.resolver.js';
import { ViewerResolver } from './viewer.resolver.js';
import { WebhooksService } from '../alerts/webhooks.service.js';

@Module({
  imports: [AuthModule],
  providers: [DecimalScalar, TaskReadsService, ProjectsResolver, BudgetsResolver, TasksResolver, PriceBookResolver, ReportsResolver, LedgerResolver, WebhooksService, WebhooksResolver, ViewerResolver],
})
export class GraphqlApiModule {}
