/**
 * Closing and reopening a UTC month (decisions §13). A close, in one transaction with its audit
 * record:
 * 1. waits until no transaction that began inside the month is still running (a hold placed at
 *    23:59:59.999 commits first);
 * 2. takes month_close in EXCLUSIVE mode: every movement in flight (settlement, resolution,
 *    adjustment: they take it in ROW SHARE first) finishes before, every later one waits and then
 *    posts after the close (a prior-period item);
 * 3. carries every hold still open in the month to the next month's first instant
 *    (spendgate_carry_open_holds), so the month keeps only what was settled in it;
 * 4. writes the close.
 * Then, in a transaction of their own (close-statements.ts), each project's statement (data, CSV,
 * PDF, ledger digest), kept as made.
 * Months close in order; only the latest closed month can be reopened, by an owner, with a reason.
 */
import { CommitmentsService } from '../commitments/commitments.service.js';
import { Inject, Injectable } from '@nestjs/common';
import type { Actor } from '../auth/audit-sink.js';
import { ChangesService } from '../audit/changes.service.js';
import type { ClientInfo } from '../auth/sessions.service.js';
import { ApiError } from '../common/api-error.js';
import { Database, DATABASE } from '../database/database.js';
import { ledgerHead, type LedgerHead } from './ledger-verify.js';
import { monthOf, parseMonth, type Month } from '../common/month.js';
import { writeStatements } from './close-statements.js';
import type { OpenItem } from './statement-data.js';

/** How long a close waits for transactions begun inside the month before it gives up. */
const OLD_TRANSACTIONS_WAIT_MS = 30_000;

export interface MonthCloseRow {
  id: string;
  month: string;
  closedAt: Date;
  closedBy: string;
  carriedTasks: number;
  lastEntryId: string;
  reopenedAt: Date | null;
  reopenedBy: string | null;
  reopenReason: string | null;
  statements: number;
  version: number;
  inForce: boolean;
  /** The ledger's newest seal at close (on the close just made; not kept on the row). */
  ledgerHead?: LedgerHead | null;
  /** The commitments' shortfalls this close posted (on the close just made; commitment_true_up keeps them). */
  trueUps?: Array<{ commitment: string; amount: string }>;
}

const CLOSES = `SELECT c.id::text, to_char(c.month, 'YYYY-MM') AS month, c.closed_at AS "closedAt", c.closed_by AS "closedBy", c.carried_tasks AS "carriedTasks",
  c.last_entry_id::text AS "lastEntryId", c.reopened_at AS "reopenedAt", c.reopened_by AS "reopenedBy", c.reopen_reason AS "reopenReason",
  (SELECT count(*)::int FROM statement s WHERE s.close_id = c.id) AS statements,
  (SELECT count(*)::int FROM month_close p WHERE p.month = c.month AND p.id <= c.id) AS version, c.reopened_at IS NULL AS "inForce" FROM month_close c`;

@Injectable()
export class MonthCloseService {
  constructor(
    @Inject(DATABASE) private readonly db: Database,
    private readonly changes: ChangesService,
    private readonly commitments: CommitmentsService,
  ) {}

  async close(label: string, actor: Actor, client: ClientInfo, who: string): Promise<MonthCloseRow> {
    return this.closeOf(parseMonth('month', label), actor, client, who);
  }

  private async closeOf(month: Month, actor: Actor, client: ClientInfo, who: string): Promise<MonthCloseRow> {
    if (month.end.getTime() > Date.now())
      throw ApiError.badRequest(
        `month: ${month.label} is not over yet: it can be closed from ${month.end.toISOString()}`,
      );
    // Two transactions. The close itself, audited, under month_close's EXCLUSIVE lock: every
    // movement of a past month and every project whose holds it carries waits for it, so it does
    // only what decides the month (the carry, the true-ups, the close's row). Then the statements,
    // from a month no movement can reach any more: read and rendered under a lock that only a
    // close, a reopening or an archive waits for. Done under the first lock, a close of 3 million
    // entries kept settlements and the carried projects' submissions waiting ~46 s, and with them
    // the connections they held (bench/FINDINGS.md, "A month's close beside the traffic").
    const pending: { carried: Array<OpenItem & { projectId: string }>; projects: string[] } = {
      carried: [],
      projects: [],
    };
    const close = await this.changes.run(
      actor,
      client,
      (c: MonthCloseRow) => ({
        action: 'month.close',
        targetKind: 'month',
        targetId: month.label,
        after: {
          carriedTasks: c.carriedTasks,
          statements: c.statements,
          lastEntryId: c.lastEntryId,
          ledgerHead: c.ledgerHead ? { seal: c.ledgerHead.seq, sealHash: c.ledgerHead.hash } : null,
          trueUps: c.trueUps ?? [],
        },
      }),
      async () => {
        // First the transactions begun inside the month (without the lock: one of them may need
        // ROW SHARE to finish), then the lock, which waits for movements begun since.
        await this.waitForTransactionsBegunBefore(month.end);
        await this.db.query('LOCK TABLE month_close IN EXCLUSIVE MODE');
        if (await this.active(month)) throw await this.alreadyClosed(month);
        await this.requireEarlierClosed(month);
        // The commitments' shortfalls (decisions §19) are the month's last entries, in its statements.
        const trueUps = await this.commitments.trueUp(month.label, this.db);
        const { rows: carried } = await this.db.query<OpenItem & { projectId: string }>(
          `SELECT 'gw-' || task_id AS "taskId", model, unit::text, amount::text AS hold, accepted_at AS "acceptedAt", project_id::text AS "projectId"
           FROM spendgate_carry_open_holds($1::date)`,
          [month.day],
        );
        const { rows: closes } = await this.db.query<{ id: string }>(
          `INSERT INTO month_close (month, closed_by, last_entry_id, carried_tasks)
           SELECT $1::date, $2, coalesce((SELECT max(id) FROM ledger_entry), 0), $3 RETURNING id::text`,
          [month.day, who, carried.length],
        );
        // The ledger's newest seal, printed on every statement and kept in the audit record: an
        // anchor outside the database for `ledger verify --head` (decisions §13).
        const head = await ledgerHead(this.db);
        pending.carried = carried;
        pending.projects = await this.projectsWithActivity(month);
        const row = (await this.byId(closes[0]!.id))!;
        return { ...row, statements: pending.projects.length, ledgerHead: head, trueUps };
      },
    );
    await writeStatements(this.db, month, close, pending.projects, pending.carried);
    return { ...(await this.byId(close.id))!, ledgerHead: close.ledgerHead ?? null, trueUps: close.trueUps ?? [] };
  }

  /**
   * A month closed already; or closed by a close whose statements were never written (its process
   * ended between the two transactions): an owner reopens it and closes it again.
   */
  private async alreadyClosed(month: Month): Promise<ApiError> {
    const { rows } = await this.db.query<{ statements: number }>(
      `SELECT (SELECT count(*)::int FROM statement s WHERE s.close_id = c.id) AS statements FROM month_close c
       WHERE c.month = $1::date AND c.reopened_at IS NULL`,
      [month.day],
    );
    if (rows[0]?.statements === 0 && (await this.projectsWithActivity(month)).length > 0)
      return ApiError.conflict(
        `month: ${month.label} is closed, but its statements were not written (the close was interrupted): an owner reopens it (reopenMonth) and closes it again`,
      );
    return ApiError.conflict(`month: ${month.label} is already closed`);
  }

  /**
   * Closes every open month from the first one with entries through `label`, in order, each its own
   * close (audited, with its statements): the way out for a database where an entry dated long
   * before the gateway's first month (a 1970 adjustment, before such dates were refused) puts
   * hundreds of empty months before the next close.
   */
  async closeThrough(label: string, actor: Actor, client: ClientInfo, who: string): Promise<MonthCloseRow[]> {
    const last = parseMonth('through', label);
    if (last.end.getTime() > Date.now())
      throw ApiError.badRequest(
        `through: ${last.label} is not over yet: it can be closed from ${last.end.toISOString()}`,
      );
    const closed: MonthCloseRow[] = [];
    for (
      let month = await this.firstOpenMonth();
      month && month.start < last.end;
      month = await this.firstOpenMonth()
    ) {
      closed.push(await this.closeOf(month, actor, client, who));
    }
    return closed;
  }

  /** The month a close may take now: the first open one, if it is over. */
  async nextToClose(): Promise<string | null> {
    const month = await this.firstOpenMonth();
    return month && month.end.getTime() <= Date.now() ? month.label : null;
  }

  /** The first month with entries (or after the latest close) that is not closed, if any. */
  private async firstOpenMonth(): Promise<Month | undefined> {
    const { rows } = await this.db.query<{ month: Date }>(
      `SELECT m AT TIME ZONE 'UTC' AS month
       FROM generate_series(date_trunc('month', (SELECT min(effective_at) FROM ledger_entry) AT TIME ZONE 'UTC'), date_trunc('month', now() AT TIME ZONE 'UTC'), interval '1 month') m
       WHERE NOT EXISTS (SELECT 1 FROM month_close c WHERE c.month = m::date AND c.reopened_at IS NULL) ORDER BY m LIMIT 1`,
    );
    return rows[0] ? monthOf(rows[0].month) : undefined;
  }

  async reopen(label: string, reason: string, actor: Actor, client: ClientInfo, who: string): Promise<boolean> {
    const month = parseMonth('month', label);
    const why = reason.trim();
    if (!why || why.length > 500)
      throw ApiError.badRequest('reason: say why the month is reopened (1 to 500 characters)');
    return this.changes.run(
      actor,
      client,
      { action: 'month.reopen', targetKind: 'month', targetId: month.label, after: { reason: why } },
      async () => {
        await this.db.query('LOCK TABLE month_close IN EXCLUSIVE MODE');
        if (!(await this.active(month))) throw ApiError.conflict(`month: ${month.label} is not closed`);
        const { rows: later } = await this.db.query<{ month: string }>(
          `SELECT to_char(month, 'YYYY-MM') AS month FROM month_close WHERE reopened_at IS NULL AND month > $1::date ORDER BY month DESC LIMIT 1`,
          [month.day],
        );
        if (later[0])
          throw ApiError.conflict(`month: ${later[0].month} is closed after it: reopen the latest closed month first`);
        const { rows: archived } = await this.db.query<{ archived: boolean }>(
          'SELECT EXISTS (SELECT 1 FROM archived_month WHERE month = $1::date) AS archived',
          [month.day],
        );
        if (archived[0]!.archived)
          throw ApiError.conflict(
            `month: ${month.label} is archived: restore it first (\`spendgate archive restore ${month.label}\`)`,
          );
        await this.db.query(
          `UPDATE month_close SET reopened_at = clock_timestamp(), reopened_by = $2, reopen_reason = $3 WHERE month = $1::date AND reopened_at IS NULL`,
          [month.day, who, why],
        );
        return true;
      },
    );
  }

  /** Every close, newest month first; a reopened close stays listed with its reopening. */
  async list(): Promise<MonthCloseRow[]> {
    return (await this.db.query<MonthCloseRow>(`${CLOSES} ORDER BY c.month DESC, c.id DESC`)).rows;
  }

  private async byId(id: string): Promise<MonthCloseRow | undefined> {
    return (await this.db.query<MonthCloseRow>(`${CLOSES} WHERE c.id = $1`, [id])).rows[0];
  }

  private async active(month: Month): Promise<boolean> {
    return (
      (await this.db.query('SELECT 1 FROM month_close WHERE month = $1::date AND reopened_at IS NULL', [month.day]))
        .rows.length > 0
    );
  }

  /** Every earlier month with ledger entries is closed: months close in order. */
  private async requireEarlierClosed(month: Month): Promise<void> {
    const { rows } = await this.db.query<{ month: string }>(
      `SELECT to_char(m, 'YYYY-MM') AS month
       FROM generate_series(date_trunc('month', (SELECT min(effective_at) FROM ledger_entry) AT TIME ZONE 'UTC'), $1::timestamp - interval '1 month', interval '1 month') m
       WHERE NOT EXISTS (SELECT 1 FROM month_close c WHERE c.month = m::date AND c.reopened_at IS NULL) ORDER BY m LIMIT 1`,
      [month.day],
    );
    if (rows[0])
      throw ApiError.conflict(
        `month: ${rows[0].month} is still open: months are closed in order, close ${rows[0].month} first`,
      );
  }

  private async waitForTransactionsBegunBefore(at: Date): Promise<void> {
    const deadline = Date.now() + OLD_TRANSACTIONS_WAIT_MS;
    for (;;) {
      const { rows } = await this.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start < $1',
        [at],
      );
      if (rows[0]!.n === 0) return;
      if (Date.now() > deadline)
        throw ApiError.conflict(
          `a transaction begun before ${at.toISOString()} is still running: retry the close later`,
        );
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  private async projectsWithActivity(month: Month): Promise<string[]> {
    const { rows } = await this.db.query<{ id: string }>(
      `SELECT DISTINCT project_id::text AS id FROM ledger_entry WHERE effective_at >= $1 AND effective_at < $2
       UNION SELECT DISTINCT project_id::text FROM spend_rollup WHERE day >= $3::date AND day < $4::date ORDER BY 1`,
      [month.start, month.end, month.day, monthOf(month.end).day],
    );
    return rows.map((r) => r.id);
  }
}
