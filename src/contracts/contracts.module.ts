/** Contracts (decisions §19): terms published as price-book versions; pricing applies them (pricing/contract.ts). */
import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { ContractsResolver } from './contracts.resolver.js';

@Module({ imports: [AuthModule], providers: [ContractsResolver] })
export class ContractsModule {}
