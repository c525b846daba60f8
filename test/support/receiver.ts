/** A webhook receiver on loopback for tests: records every request, answers as told. */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A webhook receiver: answers with `answer(n)` (the n-th request, from 1); 'hang' never answers. */
export async function receiver(answer: (n: number) => number | 'hang' = () => 200) {
  const received: Received[] = [];
  const hanging = new Set<import('node:http').ServerResponse>();
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      const a = answer(received.length);
      if (a === 'hang') hanging.add(res);
      else res.writeHead(a).end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return {
    url,
    received,
    close: async () => {
      for (const res of hanging) res.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
