/** Conversions (decisions §19): the credit price, FX rates, converted reports and statements. */
import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { ConvertedSpendController } from './converted-spend.controller.js';
import { ConvertedSpendService } from './converted-spend.service.js';
import { CurrencyResolver, DashboardConversionResolver, StatementConversionResolver } from './currency.resolver.js';
import { RatesModule } from '../rates/rates.module.js';

@Module({
  imports: [AuthModule, RatesModule],
  providers: [ConvertedSpendService, CurrencyResolver, StatementConversionResolver, DashboardConversionResolver],
  controllers: [ConvertedSpendController],
})
export class CurrencyModule {}
