/** Liveness, readiness (database and upstream; the reports replica, if any) and Prometheus metrics. */
import { Controller, Get, Headers, Inject, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { CONFIG, type Config } from '../config/config.js';
import { Database, DATABASE, REPORTS_DATABASE } from '../database/database.js';
import { UpstreamService } from '../upstream/upstream.service.js';
import { VENDOR_PATHS } from '../catalog/vendor-paths.js';
import { ReadsThread } from '../reads/reads-thread.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { checkMetricsAccess } from '../metrics/metrics-access.js';

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

  /** Prometheus text of this instance (traffic, holds, latencies); the books are at /metrics/books. */
  @Get('metrics')
  async prometheus(@Headers('authorization') authorization: string | undefined, @Res() reply: FastifyReply) {
    checkMetricsAccess(this.config, authorization);
    void reply.header('content-type', this.metrics.registry.contentType).send(await this.metrics.registry.metrics());
  }
}
