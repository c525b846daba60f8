/**
 * Reading the audit trail (decisions §12): newest first, filtered by time, actor, action and
 * project, limited to what the caller may read (owners and finance: all of their grant; a lead:
 * the records of its projects). Paged by seq.
 */
import { Inject, Injectable } from '@nestjs/common';
import { ApiError } from '../common/api-error.js';
import { requirePageSize } from '../common/paging.js';
import { hasControl } from '../common/text.js';
import { Database, READS_DATABASE } from '../database/database.js';
import { SELECT, toRecord, type RecordRow } from './audit.service.js';
import type { ChainRecord } from './audit-chain.js';

export interface AuditFilter {
  from?: Date;
  to?: Date;
  actor?: string;
  action?: string;
  projectId?: string;
  /** The caller's projects: records of others (and records of no project) are left out. */
  projectIds?: string[];
}

export const MAX_AUDIT_PAGE = 500;

@Injectable()
export class AuditLogService {
  constructor(@Inject(READS_DATABASE) private readonly db: Database) {}

  async page(
    filter: AuditFilter,
    first: number,
    after?: string,
  ): Promise<{ records: ChainRecord[]; hasNextPage: boolean }> {
    requirePageSize(first, MAX_AUDIT_PAGE);
    if (after !== undefined && !/^\d{1,18}$/.test(after))
      throw ApiError.badRequest('after: is not a cursor of this list');
    for (const [field, value] of [
      ['actor', filter.actor],
      ['action', filter.action],
    ] as const) {
      if (value !== undefined && (value.length > 200 || hasControl(value)))
        throw ApiError.badRequest(`${field}: at most 200 characters, no control characters`);
    }
    const { rows } = await this.db.query<RecordRow>(
      `${SELECT}
       WHERE ($1::timestamptz IS NULL OR a.at >= $1) AND ($2::timestamptz IS NULL OR a.at < $2)
         AND ($3::text IS NULL OR strpos(lower(a.actor), lower($3)) > 0) AND ($4::text IS NULL OR starts_with(a.action, $4))
         AND ($5::uuid IS NULL OR a.project_id = $5) AND ($6::uuid[] IS NULL OR a.project_id = ANY($6))
         AND ($7::bigint IS NULL OR a.seq < $7)
       ORDER BY a.seq DESC LIMIT $8`,
      [
        filter.from ?? null,
        filter.to ?? null,
        filter.actor ?? null,
        filter.action ?? null,
        filter.projectId ?? null,
        filter.projectIds ?? null,
        after ?? null,
        first + 1,
      ],
    );
    return { records: rows.slice(0, first).map(toRecord), hasNextPage: rows.length > first };
  }
}
