/**
 * GET /reports/statements/{projectId}/{YYYY-MM}.csv and .pdf: a project's statement of a closed
 * month as kept at close (`?version=N` for one an earlier close made). Same credentials and rights
 * as the project's other reports.
 */
import { Controller, Get, Param, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { requireAccess } from '../auth/access.js';
import { RestCallers } from '../auth/rest-caller.js';
import { ApiError } from '../common/api-error.js';
import { requireUuid } from '../common/ids.js';
import { parseMonth } from '../common/month.js';
import { StatementsService } from './statements.service.js';
import { sendAnswer } from '../report-cache/answer-headers.js';
import { ReportCache } from '../report-cache/report-cache.service.js';

@Controller('reports/statements')
export class StatementsController {
  constructor(
    private readonly statements: StatementsService,
    private readonly callers: RestCallers,
    private readonly cache: ReportCache,
  ) {}

  @Get(':projectId/:file')
  async file(
    @Req() request: FastifyRequest,
    @Param('projectId') projectId: string,
    @Param('file') file: string,
    @Query('version') version: string | undefined,
    @Res() reply: FastifyReply,
  ) {
    const who = await this.callers.of(request);
    requireUuid('projectId', projectId);
    const match = /^(\d{4}-\d{2})\.(csv|pdf)$/.exec(file);
    if (!match) throw ApiError.notFound('a statement is YYYY-MM.csv or YYYY-MM.pdf');
    requireAccess(who, 'read', projectId, 'statement');
    const month = parseMonth('month', match[1]!);
    const kind = match[2] as 'csv' | 'pdf';
    if (version !== undefined && !/^[1-9]\d{0,3}$/.test(version))
      throw ApiError.badRequest('version: a version number (1 is the first close)');
    const id = await this.statements.fileId(projectId, month, version === undefined ? undefined : Number(version));
    if (id === undefined)
      throw ApiError.notFound(
        `no statement of ${month.label} for this project: the month is not closed, or the project had no activity in it`,
      );
    // A statement row is never changed (a reopened and closed month has a new one): its bytes are kept (report-cache/).
    const answer = await this.cache.kept(`statement ${id} ${kind}`, () => this.statements.file(id, kind));
    return sendAnswer(request, reply, answer, {
      'content-type': kind === 'csv' ? 'text/csv; charset=utf-8' : 'application/pdf',
      'content-disposition': `attachment; filename="statement-${month.label}-${projectId.slice(0, 8)}.${kind}"`,
    });
  }
}
