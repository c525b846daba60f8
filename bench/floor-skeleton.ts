/**
 * bench:floor's skeleton gateway (floor.bench.ts): the least a gateway that keeps the submission path's
 * promises does per submission, and nothing else. For each POST it reads the body, commits one
 * row durably (the hold: durable before the vendor is called), forwards the body to the vendor,
 * commits the vendor's answer durably (the acceptance: durable before the client hears), and
 * answers with the vendor's bytes. No authentication, validation, pricing, budgets, ledger,
 * logging or metrics; prepared statements; node's own HTTP server.
 *
 * Environment: PORT, DATABASE_URL, UPSTREAM (the vendor's chat URL), FLOOR_COMMITS (0: a bare
 * proxy, as Portkey is; 1: the hold only; 2: hold and acceptance, as spendgate must). FLOOR_BOOKS=1
 * with FLOOR_PROJECT: the two commits write the rows spendgate's books write (floor-books.ts)
 * instead of one small row.
 */
import http from 'node:http';
import pg from 'pg';
import { Pool } from 'undici';
import { booksRows } from './floor-books.js';

const commits = Number(process.env.FLOOR_COMMITS ?? 2);
const upstream = new URL(process.env.UPSTREAM!);
const vendor = new Pool(upstream.origin, { connections: 64 });
const db = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 8 });
const HOLD = {
  name: 'floor_hold',
  text: `INSERT INTO floor_task (status, request) VALUES ('submitting', $1) RETURNING id`,
};
const ACCEPT = { name: 'floor_accept', text: `UPDATE floor_task SET status = 'processing', answer = $2 WHERE id = $1` };
const books = process.env.FLOOR_BOOKS === '1' ? await booksRows(db, process.env.FLOOR_PROJECT!) : undefined;

async function hold(body: string): Promise<string | null> {
  if (commits < 1) return null;
  if (books) return books.hold();
  return (await db.query<{ id: string }>({ ...HOLD, values: [body.length] })).rows[0]!.id;
}

async function accept(held: string | null, text: string): Promise<void> {
  if (commits < 2) return;
  if (books) return books.accept(held!, text);
  await db.query({ ...ACCEPT, values: [held, text.length] });
}

async function submit(body: string): Promise<{ status: number; text: string }> {
  const held = await hold(body);
  const res = await vendor.request({
    path: upstream.pathname,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer bench-vendor-key' },
    body,
  });
  const text = await res.body.text();
  await accept(held, text);
  return { status: res.statusCode, text };
}

const server = http.createServer((req, res) => {
  if (req.method !== 'POST') return void res.end('ok'); // readiness
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    submit(Buffer.concat(chunks).toString('utf8')).then(
      ({ status, text }) => res.writeHead(status, { 'content-type': 'application/json' }).end(text),
      (error: Error) => res.writeHead(503, { 'content-type': 'text/plain' }).end(error.message),
    );
  });
});
server.keepAliveTimeout = 10_000;
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => {
  server.close();
  void vendor.close();
  void db.end().then(() => process.exit(0));
});
