/** Commitments (decisions §19): committed spend per month, its figures, and the close's true-ups. */
import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { CommitmentsResolver } from './commitments.resolver.js';
import { CommitmentsService } from './commitments.service.js';

@Module({ imports: [AuthModule], providers: [CommitmentsService, CommitmentsResolver], exports: [CommitmentsService] })
export class CommitmentsModule {}
