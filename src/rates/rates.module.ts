/** The credit price and FX rates (decisions §19), below the reports that price credits with them. */
import { Module } from '@nestjs/common';
import { RatesService } from './rates.service.js';

@Module({ providers: [RatesService], exports: [RatesService] })
export class RatesModule {}
