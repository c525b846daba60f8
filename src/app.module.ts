/**
 * The gateway's main thread: the vendor's three paths, health and metrics. Wiring only; runtime
 * values (config, database, upstream) come from bootstrap. GraphQL and reports run in the reads
 * worker (reads/reads-app.module.ts), so that no read can hold up a submission.
 */
import { Module, type DynamicModule } from '@nestjs/common';
import { CONFIG } from './config/config.js';
import { DATABASE } from './database/database.js';
import { GatewayModule } from './gateway/gateway.module.js';
import { HealthController } from './health/health.controller.js';
import { ReadsThread } from './reads/reads-thread.js';
import { CoreModule } from './core/core.module.js';
import type { Runtime } from './core/runtime.js';

@Module({})
export class AppModule {
  static forRoot(runtime: Runtime, reads: ReadsThread): DynamicModule {
    return {
      module: AppModule,
      imports: [CoreModule.forRoot(runtime), GatewayModule],
      providers: [{ provide: ReadsThread, useValue: reads }],
      controllers: [HealthController],
    };
  }
}

export { CONFIG, DATABASE };
