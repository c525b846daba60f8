/**
 * POST /reports/vendor-statements: the vendor's CSV as the body (text/csv, spooled to a file, up to
 * 1 GiB; a column mapping as `?mapping=<JSON>`), answered with the reconciliation (201, or 200 when
 * the same file was imported before). Through the gateway, the main thread spools the body once the
 * pre-check below allowed it, and names the file (statement-spool.ts).
 * GET /reports/vendor-statements/{id}/differences.csv: the differences to send to the vendor.
 * Finance and owners.
 */
import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { Controller, Get, Inject, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { actorOf, requireAccess } from '../auth/access.js';
import { RestCallers } from '../auth/rest-caller.js';
import { ApiError } from '../common/api-error.js';
import { CONFIG, type Config } from '../config/config.js';
import { csvLine } from '../common/csv.js';
import { clientInfo } from '../auth/callers.js';
import { ReconciliationService } from './reconciliation.service.js';
import { mappingFromJson, type ColumnMapping } from './statement-format.js';
import { toReconciliation } from './vendor-statements.resolver.js';
import { discard, spool, spooledFile, SPOOLED_STATEMENT, STATEMENT_IMPORT_CHECK } from './statement-spool.js';

@Controller('reports/vendor-statements')
export class VendorStatementsController {
  constructor(
    private readonly reconciliation: ReconciliationService,
    private readonly callers: RestCallers,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  @Post()
  async import(
    @Req() request: FastifyRequest,
    @Query('mapping') mapping: string | undefined,
    @Res() reply: FastifyReply,
  ) {
    const body = request.body;
    // Spooled by the main thread already (statement-spool.ts), once StatementImportCheckController allowed it.
    const given = spooledFile(request.headers[SPOOLED_STATEMENT], this.config.STATEMENT_SPOOL_DIR);
    try {
      const who = await this.callers.of(request);
      requireAccess(who, 'books', 'all', 'importVendorStatement');
      if (!given && !(body instanceof Readable) && typeof body !== 'string')
        throw new ApiError(415, 4150, 'send the statement as the body, Content-Type: text/csv');
      const parsed = parseMapping(mapping);
      const spooled = given
        ? { file: given, dir: undefined }
        : await spool(
            typeof body === 'string' ? Readable.from([body]) : (body as Readable),
            this.config.STATEMENT_SPOOL_DIR,
          );
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
        // The main thread removes what it spooled, once this answers.
        if (spooled.dir) await rm(spooled.dir, { recursive: true, force: true });
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
  const read = mappingFromJson(text);
  if ('refusal' in read) throw ApiError.badRequest(read.refusal);
  return read.mapping;
}

/**
 * Asked by the main thread before it takes a statement's body (reads/statement-upload.ts), on the worker's own
 * path (never forwarded from a client): the caller, its permission and the mapping, as the import
 * checks them. 204, or the import's own refusal. Not audited: the import that follows is.
 */
@Controller(STATEMENT_IMPORT_CHECK.split('/')[1])
export class StatementImportCheckController {
  constructor(private readonly callers: RestCallers) {}

  @Post(STATEMENT_IMPORT_CHECK.split('/')[2])
  async allowed(
    @Req() request: FastifyRequest,
    @Query('mapping') mapping: string | undefined,
    @Res() reply: FastifyReply,
  ) {
    requireAccess(await this.callers.of(request, { audit: false }), 'books', 'all', 'importVendorStatement');
    parseMapping(mapping);
    void reply.code(204).send();
  }
}
