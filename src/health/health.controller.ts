/** Liveness, readiness (database and upstream; the reports replica, if any) and Prometheus metrics. */
import { Controller, Get, Headers, Inject, Res } from '@nestjs/common';
import { bearer, sameSecret } from '../auth/api-keys.js';
import { ApiError } from '../common/api-error.js';
import type { FastifyReply } from 'fastify';
import { CONFIG, type Config } from '../config/config.js';
import { Database, DATABASE, REPORTS_DATABASE } from '../database/database.js';
import { UpstreamService } from '../upstream/upstream.service.js';
import { VENDOR_PATHS } from '../catalog/vendor-paths.js';
import { ReadsThread } from '../reads/reads-thread.js';
import { MetricsService } from '../metrics/metrics.service.js';

@Controller()
export class HealthController {
  constructor(
    @Inject(CONFIG) private readonly config: Config,
    @Inject(DATABASE) private readonly db: Database,
    @Inject(REPORTS_DATABASE) private readonly reportsDb: Database,
    private readonly upstream: UpstreamService,
    private readonly metrics: MetricsService,
    private readonly reads: ReadsThread,
  ) {}

  @Get('healthz')
  health() {
    return { status: 'ok' };
  }

  @Get('readyz')
  async ready(@Res() reply: FastifyReply) {
    const reachable = (probe: Promise<unknown>) =>
      probe.then(
        () => 'ok',
        (e: Error) => `unreachable: ${e.message}`,
      );
    const separateReports = this.config.REPORTS_DATABASE_URL !== undefined;
    const [database, upstream, reportsDatabase, reads] = await Promise.all([
      this.db.writable().then(
        (writable) => (writable ? 'ok' : 'read-only: a standby, not the primary (a failover in progress?)'),
        (e: Error) => `unreachable: ${e.message}`,
      ),
      // Any HTTP answer means the upstream is reachable; only transport failures count against it.
      reachable(this.upstream.client.get(VENDOR_PATHS.task(0))),
      separateReports ? reachable(this.reportsDb.ping()) : undefined,
      this.reads.probe(),
    ]);
    // A reports replica or a reads worker that is down degrades reads only: the instance still
    // takes submissions and settles, so it stays ready (a load balancer must not pull it) and
    // says what is missing.
    const ok = database === 'ok' && upstream === 'ok';
    const status = !ok ? 'not ready' : (reportsDatabase ?? 'ok') === 'ok' && reads === 'ok' ? 'ready' : 'degraded';
    void reply
      .code(ok ? 200 : 503)
      .send({ status, database, upstream, ...(separateReports ? { reportsDatabase } : {}), reads });
  }

  /**
   * Prometheus text. Its counters tell spend and traffic: in production only with
   * `Authorization: Bearer <METRICS_TOKEN>` (unset: refused, saying so); elsewhere open.
   */
  @Get('metrics')
  async prometheus(@Headers('authorization') authorization: string | undefined, @Res() reply: FastifyReply) {
    if (this.config.NODE_ENV === 'production') {
      const token = this.config.METRICS_TOKEN;
      if (!token)
        throw ApiError.forbidden(
          '/metrics is closed in production until METRICS_TOKEN is set; then scrape it with Authorization: Bearer <METRICS_TOKEN>',
        );
      const given = bearer(authorization);
      if (!given || !sameSecret(given, token))
        throw ApiError.unauthorized('send Authorization: Bearer <METRICS_TOKEN>');
    }
    void reply.header('content-type', this.metrics.registry.contentType).send(await this.metrics.registry.metrics());
  }
}
