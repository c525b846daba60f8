/** Holds the one upstream client of this process (the vendor, or the sandbox simulator) and what redacts its key. */
import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { SecretRedactor } from './redact.js';
import { UpstreamClient, type UpstreamOptions } from './upstream.client.js';

@Injectable()
export class UpstreamService implements OnApplicationShutdown {
  readonly client: UpstreamClient;
  /** Removes the vendor key from anything the vendor says before it reaches a client. */
  readonly redactor: SecretRedactor;

  constructor(options: UpstreamOptions) {
    this.client = new UpstreamClient(options);
    this.redactor = new SecretRedactor([options.apiKey]);
  }

  /**
   * After the HTTP server has drained, not before (Nest runs module-destroy hooks before it closes the
   * server): a submission still on its way to the vendor when a shutdown begins is sent, not refused.
   */
  async onApplicationShutdown(): Promise<void> {
    await this.client.close();
  }
}
