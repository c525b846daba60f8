/** GET /reports/converted.csv: convertedSpend as CSV, each row's exact figure beside its converted one. */
import { Controller, Get, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { scopeProjects } from '../auth/access.js';
import { RestCallers } from '../auth/rest-caller.js';
import { csvLine } from '../common/csv.js';
import { list, one, reportDate, type QueryValue } from '../common/query-params.js';
import type { GroupKey } from '../reports/spend-report.js';
import { ConvertedSpendService } from './converted-spend.service.js';
import { RatesService } from '../rates/rates.service.js';

@Controller('reports')
export class ConvertedSpendController {
  constructor(
    private readonly converted: ConvertedSpendService,
    private readonly callers: RestCallers,
  ) {}

  @Get('converted.csv')
  async csv(@Req() request: FastifyRequest, @Query() q: Record<string, QueryValue>, @Res() reply: FastifyReply) {
    const projectIds = scopeProjects(await this.callers.of(request), list(q.projectIds));
    const groupBy = (list(q.groupBy) ?? []) as GroupKey[];
    const report = await this.converted.report(
      { from: reportDate('from', q.from), to: reportDate('to', q.to), groupBy, ...(projectIds ? { projectIds } : {}) },
      RatesService.currency('currency', one(q.currency) ?? ''),
    );
    const lines = [
      csvLine([...groupBy, 'unit', 'amount', 'tasks', `converted_${report.currency}`]),
      ...report.rows.map((r) => csvLine([...r.keys, r.unit, r.amount, r.tasksExact, r.converted ?? ''])),
      csvLine([...groupBy.map(() => ''), 'converted total', '', '', report.amount ?? '']),
      csvLine([report.label, ...(report.missing.length ? [report.missing.join('; ')] : [])]),
    ];
    void reply.header('content-type', 'text/csv; charset=utf-8').send(`${lines.join('\n')}\n`);
  }
}
