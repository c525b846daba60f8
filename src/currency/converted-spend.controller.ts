/** GET /reports/converted.csv: convertedSpend as CSV, each row's exact figure beside its converted one. */
import { Controller, Get, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { scopeProjects } from '../auth/access.js';
import { RestCallers } from '../auth/rest-caller.js';
import { ApiError } from '../common/api-error.js';
import { csvLine } from '../common/csv.js';
import { calendarDate, notADate } from '../common/dates.js';
import type { GroupKey } from '../reports/spend-report.js';
import { ConvertedSpendService } from './converted-spend.service.js';
import { RatesService } from './rates.service.js';

type QueryValue = string | string[] | undefined;
const one = (value: QueryValue) => (Array.isArray(value) ? value[0] : value);
const list = (value: QueryValue) => one(value)?.split(',').filter(Boolean);

@Controller('reports')
export class ConvertedSpendController {
  constructor(
    private readonly converted: ConvertedSpendService,
    private readonly callers: RestCallers,
  ) {}

  @Get('converted.csv')
  async csv(@Req() request: FastifyRequest, @Query() q: Record<string, QueryValue>, @Res() reply: FastifyReply) {
    const projectIds = scopeProjects(await this.callers.of(request), list(q.projectIds));
    const date = (field: 'from' | 'to') => {
      const text = one(q[field]);
      if (!text) throw ApiError.badRequest(`${field}: is required (a UTC midnight, e.g. 2026-11-01T00:00:00Z)`);
      const at = calendarDate(text);
      if (!at) throw ApiError.badRequest(notADate(field, text));
      return at;
    };
    const groupBy = (list(q.groupBy) ?? []) as GroupKey[];
    const report = await this.converted.report(
      { from: date('from'), to: date('to'), groupBy, ...(projectIds ? { projectIds } : {}) },
      RatesService.currency('currency', one(q.currency) ?? ''),
    );
    const lines = [
      csvLine([...groupBy, 'unit', 'amount', 'tasks', `converted_${report.currency}`]),
      ...report.rows.map((r) => csvLine([...r.keys, r.unit, r.amount, r.tasks, r.converted ?? ''])),
      csvLine([...groupBy.map(() => ''), 'converted total', '', '', report.amount ?? '']),
      csvLine([report.label, ...(report.missing.length ? [report.missing.join('; ')] : [])]),
    ];
    void reply.header('content-type', 'text/csv; charset=utf-8').send(`${lines.join('\n')}\n`);
  }
}
