/**
 * POST /reports/vendor-statements: the vendor's CSV as the body (text/csv, spooled to a file, up to 1 GiB; a
 * column mapping as `?mapping=<JSON>`), answered with the reconciliation (201, or 200 when the same
 * file was imported before). GET /reports/vendor-statements/{id}/differences.csv: the differences
 * to send to the vendor. Finance and owners.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Controller, Get, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { actorOf, requireAccess } from '../auth/access.js';
import { RestCallers } from '../auth/rest-caller.js';
import { ApiError } from '../common/api-error.js';
import { csvLine } from '../common/csv.js';
import { clientInfo } from '../auth/callers.js';
import { ReconciliationService } from './reconciliation.service.js';
import type { ColumnMapping } from './statement-format.js';
import { toReconciliation } from './vendor-statements.resolver.js';

@Controller('reports/vendor-statements')
export class VendorStatementsController {
  constructor(
    private readonly reconciliation: ReconciliationService,
    private readonly callers: RestCallers,
  ) {}

  @Post()
  async import(
    @Req() request: FastifyRequest,
    @Query('mapping') mapping: string | undefined,
    @Res() reply: FastifyReply,
  ) {
    const body = request.body;
    try {
      const who = await this.callers.of(request);
      requireAccess(who, 'books', 'all', 'importVendorStatement');
      if (!(body instanceof Readable) && typeof body !== 'string')
        throw new ApiError(415, 4150, 'send the statement as the body, Content-Type: text/csv');
      const parsed = parseMapping(mapping);
      const spooled = await spool(typeof body === 'string' ? Readable.from([body]) : body);
      try {
        const done = await this.reconciliation.import(
          createReadStream(spooled.file),
          parsed,
          who,
          clientInfo(request),
          actorOf(who).label,
        );
        void reply.code(done.created ? 201 : 200).send(toReconciliation(done.statement, done.created));
      } finally {
        await rm(spooled.dir, { recursive: true, force: true });
      }
    } catch (error) {
      // A refusal before the body was read: read the rest first, or the connection is reset under
      // the client before it sees the 4xx.
      if (body instanceof Readable) await discard(body);
      throw error;
    }
  }

  @Get(':id/differences.csv')
  async differences(@Req() request: FastifyRequest, @Param('id') id: string, @Res() reply: FastifyReply) {
    requireAccess(await this.callers.of(request), 'books', 'all', 'vendorDifferences');
    if (!/^[0-9a-f-]{36}$/i.test(id) || !(await this.reconciliation.statement(id)))
      throw ApiError.notFound('no such reconciliation');
    const service = this.reconciliation;
    async function* lines() {
      yield `${csvLine(['class', 'vendor_task_id', 'task_id', 'model', 'unit', 'ours', 'theirs', 'difference', 'state', 'note'])}\n`;
      let after: string | undefined;
      for (;;) {
        const page = await service.items(id, {}, 1000, after);
        for (const i of page)
          yield `${csvLine([i.class, i.vendorTaskId, i.taskId, i.model, i.unit, i.ours, i.theirs, i.difference, i.state, i.note])}\n`;
        if (page.length < 1000) return;
        after = page.at(-1)!.id;
      }
    }
    void reply
      .header('content-type', 'text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="differences-${id.slice(0, 8)}.csv"`)
      .send(Readable.from(lines()));
  }
}

function parseMapping(text: string | undefined): ColumnMapping[] | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw ApiError.badRequest(
      'mapping: a JSON array such as [{"field":"amount","column":"Cost (cents)","scale":"0.01"}]',
    );
  }
  if (
    !Array.isArray(value) ||
    value.length > 10 ||
    !value.every((m) => m && typeof m === 'object' && typeof m.field === 'string' && typeof m.column === 'string')
  ) {
    throw ApiError.badRequest('mapping: a JSON array of {field, column[, scale][, format]}');
  }
  return value as ColumnMapping[];
}

const MAX_STATEMENT_BYTES = 1 << 30;

/**
 * The body to a temporary file first, at the network's pace: the request must arrive within
 * REQUEST_TIMEOUT_MS, and a statement read while it is matched would arrive only as fast as the
 * database takes its rows (a million in ~20 s). Over 1 GiB: 413.
 */
async function spool(body: Readable): Promise<{ dir: string; file: string }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'spendgate-statement-'));
  const file = path.join(dir, 'statement.csv');
  let size = 0;
  // Past the limit the rest is read and dropped, so that the client hears the 413.
  const limit = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      size += chunk.length;
      done(null, size > MAX_STATEMENT_BYTES ? undefined : chunk);
    },
  });
  try {
    await pipeline(body, limit, createWriteStream(file));
  } catch {
    await rm(dir, { recursive: true, force: true });
    throw new ApiError(400, 4000, 'the statement did not arrive whole: send it again');
  }
  if (size > MAX_STATEMENT_BYTES) {
    await rm(dir, { recursive: true, force: true });
    throw new ApiError(
      413,
      4130,
      'a statement is at most 1 GiB: split it (rows an earlier statement holds are skipped as repeated)',
    );
  }
  return { dir, file };
}

/** Reads and drops what is left of a refused body, up to 1 GiB (the request timeout bounds the time). */
async function discard(body: Readable): Promise<void> {
  if (body.readableEnded || body.destroyed) return;
  let left = 1 << 30;
  await new Promise<void>((resolve) => {
    body.on('data', (chunk: Buffer) => {
      left -= chunk.length;
      if (left < 0) body.destroy();
    });
    body
      .once('end', resolve)
      .once('close', resolve)
      .once('error', () => resolve());
    body.resume();
  });
}
