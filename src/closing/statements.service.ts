/**
 * Reading kept statements: a project's statement of a month as its close in force made it, and
 * the versions of earlier closes of the same month (a reopening keeps them). Nothing here
 * computes a statement again.
 */
import { Inject, Injectable } from '@nestjs/common';
import { Database, READS_DATABASE } from '../database/database.js';
import type { Month } from '../common/month.js';
import type { StatementData } from './statement-data.js';

export interface KeptStatement {
  id: string;
  current: boolean;
  data: StatementData;
}

@Injectable()
export class StatementsService {
  constructor(@Inject(READS_DATABASE) private readonly db: Database) {}

  /** Every version of a project's statement of the month, newest first; `current` is the close in force. */
  async versions(projectId: string, month: Month): Promise<KeptStatement[]> {
    const { rows } = await this.db.query<{ id: string; current: boolean; body: StatementData }>(
      `SELECT s.id::text, c.reopened_at IS NULL AS current, s.body FROM statement s JOIN month_close c ON c.id = s.close_id
       WHERE s.project_id = $1 AND s.month = $2::date ORDER BY s.id DESC`,
      [projectId, month.day],
    );
    return rows.map((r) => ({ id: r.id, current: r.current, data: r.body }));
  }

  /** The statements in force of a month, for the projects given (undefined: all), by project name. */
  async forMonth(month: Month, projectIds: string[] | undefined): Promise<StatementData[]> {
    const { rows } = await this.db.query<{ body: StatementData }>(
      `SELECT s.body FROM statement s JOIN month_close c ON c.id = s.close_id
       WHERE s.month = $1::date AND c.reopened_at IS NULL AND ($2::uuid[] IS NULL OR s.project_id = ANY($2)) ORDER BY s.body->'project'->>'name', s.project_id`,
      [month.day, projectIds ?? null],
    );
    return rows.map((r) => r.body);
  }

  /** The statement row of a file as kept: the current version, or `version` (1 for the first close). */
  async fileId(projectId: string, month: Month, version?: number): Promise<string | undefined> {
    const { rows } = await this.db.query<{ id: string }>(
      `SELECT s.id::text AS id FROM statement s JOIN month_close c ON c.id = s.close_id
       WHERE s.project_id = $1 AND s.month = $2::date AND ($3::int IS NULL AND c.reopened_at IS NULL OR ($3::int IS NOT NULL AND (s.body->>'version')::int = $3))
       ORDER BY s.id DESC LIMIT 1`,
      [projectId, month.day, version ?? null],
    );
    return rows[0]?.id;
  }

  /** A statement row's file: its rows never change, so neither do these bytes. */
  async file(id: string, kind: 'csv' | 'pdf'): Promise<Buffer> {
    const { rows } = await this.db.query<{ csv: string; pdf: Buffer }>(
      'SELECT s.csv, s.pdf FROM statement s WHERE s.id = $1::bigint',
      [id],
    );
    const file = rows[0]![kind];
    return Buffer.isBuffer(file) ? file : Buffer.from(file);
  }
}
