/**
 * The web pages the gateway serves from its own files (decisions §9): the console at /console
 * (built by Vite into dist/console; `/` leads there) and GraphiQL at /graphiql outside
 * production, whose scripts come from node_modules instead of a CDN. Nothing is fetched from
 * elsewhere, so both work offline, under a Content-Security-Policy of 'self' only.
 *
 * Static files cost the main thread a file read each (hashed assets are cached by the browser for
 * good); the console's data comes from /graphql, which the reads worker answers.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ApiError } from '../common/api-error.js';

/** Everything from the gateway itself; no inline script; no framing. */
export const CONTENT_SECURITY_POLICY =
  "default-src 'self'; img-src 'self' data:; font-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** @fastify/static would set its own cache-control; ours (set per file kind) stays. */
const OWN_CACHE_HEADER = { cacheControl: false } as const;

const require = createRequire(import.meta.url);
const moduleDir = (name: string) => path.dirname(require.resolve(`${name}/package.json`));

/** GraphiQL's page: our two files, then the packages' own browser builds. */
function graphiqlFiles(root: string): Map<string, { dir: string; file: string }> {
  const own = path.join(root, 'console', 'graphiql');
  return new Map([
    ['', { dir: own, file: 'index.html' }],
    ['start.js', { dir: own, file: 'start.js' }],
    ['page.css', { dir: own, file: 'page.css' }],
    ['graphiql.min.js', { dir: moduleDir('graphiql'), file: 'graphiql.min.js' }],
    ['graphiql.min.css', { dir: moduleDir('graphiql'), file: 'graphiql.min.css' }],
    ['react.production.min.js', { dir: path.join(moduleDir('react'), 'umd'), file: 'react.production.min.js' }],
    [
      'react-dom.production.min.js',
      { dir: path.join(moduleDir('react-dom'), 'umd'), file: 'react-dom.production.min.js' },
    ],
  ]);
}

export function serveWebPages(fastify: FastifyInstance, options: { graphiql: boolean }): void {
  const root = packageRoot();
  const built = path.join(root, 'dist', 'console');
  void fastify.register(fastifyStatic, { root: path.join(root, 'console'), serve: false });
  const secure = (reply: FastifyReply, cache: string) =>
    reply
      .header('content-security-policy', CONTENT_SECURITY_POLICY)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', cache);

  fastify.get('/', (_request, reply) => reply.redirect('/console/', 302));
  fastify.get('/console', (_request, reply) => reply.redirect('/console/', 302));
  fastify.get('/console/*', (request, reply) => {
    if (!existsSync(path.join(built, 'index.html'))) {
      return reply
        .code(503)
        .send(ApiError.serviceUnavailable('the console is not built: run `npm run build`').toBody());
    }
    const file = (request.params as { '*': string })['*'];
    // Hashed bundles never change under their name; the page itself is always asked again.
    if (/^assets\/[\w.-]+$/.test(file) && existsSync(path.join(built, file)))
      return secure(reply, 'public, max-age=31536000, immutable').sendFile(file, built, OWN_CACHE_HEADER);
    if (/^[\w-]+\.(svg|png|ico)$/.test(file) && existsSync(path.join(built, file)))
      return secure(reply, 'public, max-age=3600').sendFile(file, built, OWN_CACHE_HEADER);
    if (file.startsWith('assets/'))
      return reply.code(404).send(ApiError.notFound(`no console file ${file.slice(0, 80)}`).toBody());
    return secure(reply, 'no-cache').sendFile('index.html', built, OWN_CACHE_HEADER);
  });

  if (!options.graphiql) return;
  const files = graphiqlFiles(root);
  fastify.get('/graphiql', (_request, reply) => reply.redirect('/graphiql/', 302));
  fastify.get('/graphiql/*', (request, reply) => {
    const found = files.get((request.params as { '*': string })['*']);
    if (!found) return reply.code(404).send(ApiError.notFound('no such GraphiQL file').toBody());
    return secure(reply, 'no-cache').sendFile(found.file, found.dir, OWN_CACHE_HEADER);
  });
}

/** The package's directory (where console/ lives): above dist/src/console, or src/console in tests. */
function packageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    if (existsSync(path.join(dir, 'console', 'graphiql', 'index.html'))) return dir;
    dir = path.dirname(dir);
  }
  throw new Error('console/graphiql/index.html not found above ' + fileURLToPath(import.meta.url));
}
