import { Module } from '@nestjs/common';
import { ExhaustionEvents } from '../alerts/exhaustion-events.js';
import { CONFIG, type Config } from '../config/config.js';
import { LimitEvents } from '../limits/limit-events.js';
import { GatewayController } from './gateway.controller.js';
import { GatewayService } from './gateway.service.js';
import { RateLimiter } from './rate-limiter.js';
import { StreamRelayService } from './stream-relay.service.js';

@Module({
  controllers: [GatewayController],
  providers: [
    GatewayService,
    StreamRelayService,
    ExhaustionEvents,
    LimitEvents,
    {
      provide: RateLimiter,
      inject: [CONFIG],
      useFactory: (config: Config) => new RateLimiter(config.RATE_LIMIT_PER_SECOND),
    },
  ],
})
export class GatewayModule {}
