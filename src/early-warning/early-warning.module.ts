/** Early warning's reads over GraphQL: forecasts on budgets, budgets at risk, anomalies (decisions §15). */
import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { ForecastResolver } from '../forecast/forecast.resolver.js';
import { EarlyWarningResolver } from './early-warning.resolver.js';
import { EarlyWarningService } from './early-warning.service.js';

@Module({ imports: [AuthModule], providers: [ForecastResolver, EarlyWarningService, EarlyWarningResolver] })
export class EarlyWarningModule {}
