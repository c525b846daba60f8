/** GET /metrics/books: the books as Prometheus text (decisions §21), served by the reads worker. */
import { Controller, Get, Headers, Inject, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { CONFIG, type Config } from '../config/config.js';
import { checkMetricsAccess } from '../metrics/metrics-access.js';
import { BookMetricsService } from './book-metrics.service.js';

@Controller()
export class BookMetricsController {
  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly bookMetrics: BookMetricsService,
  ) {}

  @Get('metrics/books')
  async prometheus(@Headers('authorization') authorization: string | undefined, @Res() reply: FastifyReply) {
    checkMetricsAccess(this.config, authorization);
    void reply.header('content-type', this.bookMetrics.contentType).send(await this.bookMetrics.text());
  }
}
