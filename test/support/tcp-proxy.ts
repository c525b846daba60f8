/**
 * A TCP proxy in front of PostgreSQL, as HAProxy stands in front of Patroni's leader: a switch
 * cuts every open session. It can also swallow the server's replies, so a statement commits on
 * the server while its client never hears of it (a connection lost at the worst moment).
 */
import net from 'node:net';
import { freePort } from '../../src/database/embedded.js';

export class TcpProxy {
  private readonly sockets = new Set<net.Socket>();
  private readonly server: net.Server;
  /** While true, what the server sends is dropped on the floor. */
  swallowReplies = false;

  constructor(private target: number) {
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.target, '127.0.0.1');
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.on('data', (chunk: Buffer) => {
        if (!this.swallowReplies) client.write(chunk);
      });
      upstream.on('end', () => client.end());
    });
  }

  async listen(): Promise<number> {
    const port = await freePort();
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    return port;
  }

  /** Every open session cut; new ones go to `target` (the same server when omitted). */
  switchTo(target = this.target): void {
    this.target = target;
    for (const s of this.sockets) s.destroy();
  }

  close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
