/** Reconciling the vendor's statement against the ledger (decisions §14). */
import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { ReconciliationService } from './reconciliation.service.js';
import { StatementImportCheckController, VendorStatementsController } from './vendor-statements.controller.js';
import { VendorStatementsResolver } from './vendor-statements.resolver.js';

@Module({
  imports: [AuthModule],
  providers: [ReconciliationService, VendorStatementsResolver],
  controllers: [VendorStatementsController, StatementImportCheckController],
})
export class VendorStatementsModule {}
