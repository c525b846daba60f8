/**
 * GET /reports/audit.csv: the audit trail as CSV (same filters and rights as auditLog), newest
 * first, with each record's hash and the previous one, so it can be checked outside spendgate.
 * Streamed a page at a time.
 */
import { Controller, Get, Query, Req, Res } from '@nestjs/common';
import { calendarDate, notADate } from '../common/dates.js';
import { one, type QueryValue } from '../common/query-params.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import { scopeProjects } from '../auth/access.js';
import { RestCallers } from '../auth/rest-caller.js';
import { ApiError } from '../common/api-error.js';
import { csvLine } from '../common/csv.js';
import { requireUuid } from '../common/ids.js';
import { AuditLogService, MAX_AUDIT_PAGE, type AuditFilter } from './audit-log.service.js';

const HEADER = [
  'seq',
  'at',
  'actor_kind',
  'actor',
  'action',
  'target_kind',
  'target_id',
  'project_id',
  'before',
  'after',
  'request_id',
  'client_address',
  'user_agent',
  'prev_hash',
  'hash',
];

@Controller('reports')
export class AuditController {
  constructor(
    private readonly log: AuditLogService,
    private readonly callers: RestCallers,
  ) {}

  @Get('audit.csv')
  async csv(@Req() request: FastifyRequest, @Query() q: Record<string, QueryValue>, @Res() reply: FastifyReply) {
    const who = await this.callers.of(request);
    const projectId = one(q.projectId);
    if (projectId) requireUuid('projectId', projectId);
    const projectIds = scopeProjects(who, projectId ? [projectId] : undefined, 'audit');
    const date = (field: string) => {
      const v = one(q[field]);
      const d = v ? calendarDate(v) : undefined;
      if (d === null) throw ApiError.badRequest(notADate(field, v!));
      return d;
    };
    const filter: AuditFilter = {
      ...(date('from') ? { from: date('from')! } : {}),
      ...(date('to') ? { to: date('to')! } : {}),
      ...(one(q.actor) ? { actor: one(q.actor)! } : {}),
      ...(one(q.action) ? { action: one(q.action)! } : {}),
      ...(projectId ? { projectId } : projectIds ? { projectIds } : {}),
    };
    await this.log.page(filter, 1); // refuses a bad filter before the answer starts
    const log = this.log;
    async function* lines() {
      yield `${HEADER.join(',')}\n`;
      let after: string | undefined;
      for (;;) {
        const page = await log.page(filter, MAX_AUDIT_PAGE, after);
        for (const r of page.records) {
          yield `${csvLine([r.seq, r.at, r.actorKind, r.actor, r.action, r.targetKind, r.targetId, r.projectId, r.before, r.after, r.requestId, r.clientAddress, r.userAgent, r.prevHash.toString('hex'), r.hash.toString('hex')])}\n`;
        }
        if (!page.hasNextPage) return;
        after = page.records.at(-1)!.seq;
      }
    }
    void reply
      .header('content-type', 'text/csv; charset=utf-8')
      .header('content-disposition', 'attachment; filename="audit.csv"')
      .send(Readable.from(lines()));
  }
}
