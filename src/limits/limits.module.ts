/** Limits on a project's traffic (decisions §20): set, listed and deleted here; checked in the hold. */
import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { LimitsResolver } from './limits.resolver.js';
import { LimitsService } from './limits.service.js';

@Module({ imports: [AuthModule], providers: [LimitsService, LimitsResolver], exports: [LimitsService] })
export class LimitsModule {}
