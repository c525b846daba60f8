/**
 * GET /reports/spend.csv (the spend report as CSV, same filters and grouping as GraphQL) and GET /reports/focus.csv
 * (FOCUS 1.2).
 */
import { Controller, Get, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { scopeProjects } from '../auth/access.js';
import { RestCallers } from '../auth/rest-caller.js';
import { ApiError } from '../common/api-error.js';
import { list, one, reportDate, type QueryValue } from '../common/query-params.js';
import { ReportsService } from './reports.service.js';
import { toCsv } from './spend-csv.js';
import { sendAnswer } from '../report-cache/answer-headers.js';
import { arrivalOf, ReportCache, type CachedAnswer } from '../report-cache/report-cache.service.js';
import type { GroupKey } from './spend-report.js';

interface Scope {
  projectIds: string[] | undefined;
  from: Date;
  to: Date;
}

@Controller('reports')
export class ReportsController {
  constructor(
    private readonly reports: ReportsService,
    private readonly callers: RestCallers,
    private readonly cache: ReportCache,
  ) {}

  @Get('spend.csv')
  async spendCsv(@Req() request: FastifyRequest, @Query() q: Record<string, QueryValue>, @Res() reply: FastifyReply) {
    const { projectIds, from, to } = await this.scope(request, q);
    const groupBy = (list(q.groupBy) ?? []) as GroupKey[];
    const filters = Object.fromEntries(
      (['models', 'families', 'kinds', 'statuses', 'apiKeys', 'users', 'tags'] as const).flatMap((name) => {
        const values = list(q[name]);
        return values ? [[name, values]] : [];
      }),
    );
    const unit = one(q.unit);
    const orderBy = one(q.orderBy);
    const first = one(q.first);
    if (first !== undefined && !/^\d{1,6}$/.test(first))
      throw ApiError.badRequest('first: must be a whole number from 1 to 10000');
    const query = {
      from,
      to,
      groupBy,
      ...(projectIds ? { projectIds } : {}),
      ...filters,
      ...(unit ? { unit: unit as 'USD' | 'CREDITS' } : {}),
      ...(orderBy ? { orderBy: orderBy as 'keys' | 'amount' } : {}),
      ...(first !== undefined ? { first: Number(first) } : {}),
    };
    const key = `spend.csv ${JSON.stringify({ ...query, projectIds: projectIds?.toSorted() })}`;
    const answer = await this.cache.answer(request, arrivalOf(reply), key, { projectIds, from, to }, async () =>
      Buffer.from(toCsv(groupBy, await this.reports.spend(query))),
    );
    await this.attach(request, reply, 'spend', { projectIds, from, to }, answer);
  }

  @Get('focus.csv')
  async focusCsv(@Req() request: FastifyRequest, @Query() q: Record<string, QueryValue>, @Res() reply: FastifyReply) {
    const scope = await this.scope(request, q);
    const key = `focus.csv ${JSON.stringify({ ...scope, projectIds: scope.projectIds?.toSorted() })}`;
    const answer = await this.cache.answer(request, arrivalOf(reply), key, scope, async () =>
      Buffer.from(
        await this.reports.focus({
          from: scope.from,
          to: scope.to,
          ...(scope.projectIds ? { projectIds: scope.projectIds } : {}),
        }),
      ),
    );
    await this.attach(request, reply, 'focus', scope, answer);
  }

  /** Who may read which projects, and the date range every report needs. */
  private async scope(request: FastifyRequest, q: Record<string, QueryValue>): Promise<Scope> {
    const projectIds = scopeProjects(await this.callers.of(request), list(q.projectIds));
    if (!q.from || !q.to)
      throw ApiError.badRequest(`${q.from ? 'to' : 'from'}: is required (a UTC midnight, e.g. 2026-11-01T00:00:00Z)`);
    return { projectIds, from: reportDate('from', q.from), to: reportDate('to', q.to) };
  }

  /** Sends a CSV as a download named after its range and project, with its validators (report-cache/). */
  private async attach(
    request: FastifyRequest,
    reply: FastifyReply,
    kind: string,
    scope: Scope,
    answer: CachedAnswer<Buffer>,
  ): Promise<void> {
    const name = await this.reports.fileName(kind, scope.from, scope.to, scope.projectIds);
    sendAnswer(request, reply, answer, {
      'content-type': 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="${name}"`,
    });
  }
}
