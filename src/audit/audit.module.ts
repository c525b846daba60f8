/** Reading the audit trail: GraphQL `auditLog` and GET /reports/audit.csv (writing it is core: audit.service.ts). */
import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { AuditController } from './audit.controller.js';
import { AuditLogService } from './audit-log.service.js';
import { AuditResolver } from './audit.resolver.js';

@Module({ imports: [AuthModule], providers: [AuditLogService, AuditResolver], controllers: [AuditController] })
export class AuditModule {}
