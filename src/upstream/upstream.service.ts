/** Holds the one upstream client of this process (the vendor, or the sandbox simulator). */
import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import { UpstreamClient, type UpstreamOptions } from './upstream.client.js';

@Injectable()
export class UpstreamService implements OnModuleDestroy {
  readonly client: UpstreamClient;

  constructor(options: UpstreamOptions) {
    this.client = new UpstreamClient(options);
  }

  async onModuleDestroy(): Promise<void> {
    await this.client.close();
  }
}
