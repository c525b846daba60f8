import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { TaskReadsService } from '../tasks/task-reads.service.js';
import { BudgetsResolver } from '../budgets/budgets.resolver.js';
import { PriceBookResolver } from '../price-book/price-book.resolver.js';
import { ProjectsResolver } from '../projects/projects.resolver.js';
import { DecimalScalar } from '../graphql/scalars.js';
import { AdjustmentsResolver } from '../tasks/adjustments.resolver.js';
import { ReportsResolver } from '../reports/reports.resolver.js';
import { TasksResolver } from '../tasks/tasks.resolver.js';
import { WebhooksResolver } from '../alerts/webhooks.resolver.js';
import { ViewerResolver } from '../people/viewer.resolver.js';
import { WebhooksService } from '../alerts/webhooks.service.js';

@Module({
  imports: [AuthModule],
  providers: [
    DecimalScalar,
    TaskReadsService,
    ProjectsResolver,
    BudgetsResolver,
    TasksResolver,
    PriceBookResolver,
    ReportsResolver,
    AdjustmentsResolver,
    WebhooksService,
    WebhooksResolver,
    ViewerResolver,
  ],
})
export class GraphqlApiModule {}
