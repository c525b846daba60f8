/**
 * In the sandbox, the gateway passes /__sim/* to its simulator's control plane, so a new user can
 * steer the vendor from the gateway's own address (the simulator listens on a random port): finish
 * a task now with a chosen usage (`POST /__sim/tasks/<taskId>/complete`, e.g. `{"status":"ready",
 * "usage":null}` to put a chat task under review), stall it or forget it (`/stall`, `/forget`),
 * turn fault knobs (`POST /__sim/config`). Never outside the sandbox: there is no simulator there.
 */
import type { FastifyInstance } from 'fastify';
import { request } from 'undici';

export function passSimulatorControl(fastify: FastifyInstance, simulatorUrl: string): void {
  fastify.route({
    method: ['GET', 'POST'],
    url: '/__sim/*',
    handler: async (req, reply) => {
      const res = await request(`${simulatorUrl}${req.url}`, {
        method: req.method as 'GET' | 'POST',
        headers: { 'content-type': 'application/json' },
        body: req.method === 'POST' ? JSON.stringify(req.body ?? {}) : undefined,
      });
      return reply
        .code(res.statusCode)
        .header('content-type', 'application/json')
        .send(await res.body.text());
    },
  });
}
