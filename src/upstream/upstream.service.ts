/** Holds the one upstream client of this process (the vendor, or the sandbox simulator) and what redacts its key. */
import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import { SecretRedactor } from './redact.js';
import { UpstreamClient, type UpstreamOptions } from './upstream.client.js';

@Injectable()
export class UpstreamService implements OnModuleDestroy {
  readonly client: UpstreamClient;
  /** Removes the vendor key from anything the vendor says before it reaches a client. */
  readonly redactor: SecretRedactor;

  constructor(options: UpstreamOptions) {
    this.client = new UpstreamClient(options);
    this.redactor = new SecretRedactor([options.apiKey]);
  }

  async onModuleDestroy(): Promise<void> {
    await this.client.close();
  }
}
