import { Module } from '@nestjs/common';
import { BookMetricsController } from './book-metrics.controller.js';
import { BookMetricsService } from './book-metrics.service.js';

@Module({ controllers: [BookMetricsController], providers: [BookMetricsService] })
export class BookMetricsModule {}
