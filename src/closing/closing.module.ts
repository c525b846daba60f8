/** Closing months, statements (GraphQL and GET /reports/statements/…) (decisions §13). */
import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { CommitmentsModule } from '../commitments/commitments.module.js';
import { ClosingResolver } from './closing.resolver.js';
import { MonthCloseService } from './month-close.service.js';
import { StatementsController } from './statements.controller.js';
import { StatementsService } from './statements.service.js';

@Module({
  imports: [AuthModule, CommitmentsModule],
  providers: [MonthCloseService, StatementsService, ClosingResolver],
  controllers: [StatementsController],
})
export class ClosingModule {}
