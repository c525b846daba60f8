/**
 * bench:floor's books skeleton (floor-skeleton.ts with FLOOR_BOOKS=1): the rows spendgate's books
 * write for one chat submission, in the fewest statements, and nothing else. Its two commits carry
 * what spendgate's do (decisions §3, §4, §18):
 *   - the hold: the task row (quote, lines, first poll), its ledger entry, its budget's balance;
 *   - the acceptance: the task row rewritten in place, and the vendor's id in task_upstream.
 * No checks, locks, limits, idempotency, thresholds or batching: set beside the two-commit skeleton,
 * it shows what the rows themselves cost; set beside spendgate, what spendgate adds to them.
 * The quote is hold-probe.ts's, priced once at start: the chat body bench:floor sends, with price book
 * version 1 (the version a gateway's first start seeds).
 */
import type pg from 'pg';
import { acceptanceOf } from '../src/upstream/vendor-protocol.js';
import { probeQuote, probeTaskValues } from './hold-probe.js';

const HOLD = `WITH t AS (
    INSERT INTO task (id, project_id, model, family, kind, unit, status, price_basis, estimate_amount, hold_amount,
                      price_book_version, exactness, estimate_tier, estimate_warnings, estimate_lines,
                      accepted_at, updated_at, submission_ref, next_poll_at)
    SELECT spendgate_new_task_id(now()), $1, $2, $3, $4, $5, 'submitting', $6, $7, $7, 1, $8, $9, $10,
           ARRAY(SELECT ROW(l.c, l.q, l.r, l.p, l.a)::spendgate_line
                 FROM unnest($11::text[], $12::numeric[], $13::numeric[], $14::numeric[], $15::numeric[]) AS l(c, q, r, p, a)),
           now(), now(), gen_random_uuid(), spendgate_first_poll_at(now())
    RETURNING id, accepted_at),
  e AS (INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at)
        SELECT $1, t.id, 'hold', $5, $7, t.accepted_at FROM t),
  b AS (UPDATE budget_period SET held = held + $7 WHERE budget_id = $16 AND period_start = $17 AND subject = '')
  SELECT id FROM t`;

const ACCEPT = `WITH u AS (
    UPDATE task SET status = 'processing', upstream_id = $2, upstream_task_id = $3, response_body = $4,
                    submitted_at = now(), updated_at = now()
    WHERE id = $1 RETURNING id, project_id)
  INSERT INTO task_upstream (upstream_task_id, task_id, project_id) SELECT $3, id, project_id FROM u`;

export interface BooksRows {
  hold(): Promise<string>;
  accept(taskId: string, vendorAnswer: string): Promise<void>;
}

/** Prepares the project's rows (its budget's balance for the period now) and answers the two writes. */
export async function booksRows(db: pg.Pool, projectId: string): Promise<BooksRows> {
  const q = probeQuote;
  const { rows: periods } = await db.query<{ budget_id: string; period_start: Date }>(
    `INSERT INTO budget_period (budget_id, period_start, period_end)
     SELECT b.id, w.period_start, w.period_end FROM budget b, spendgate_period_window(b.period, now()) w
     WHERE b.project_id = $1 AND b.unit = $2
     ON CONFLICT (budget_id, period_start, subject) DO UPDATE SET held = budget_period.held
     RETURNING budget_id, period_start`,
    [projectId, q.unit],
  );
  const lines = q.lines;
  const values = [
    ...probeTaskValues(projectId),
    q.exactness,
    q.tier ?? null,
    q.warnings,
    lines.map((l) => l.component),
    lines.map((l) => l.quantity.toFixed()),
    lines.map((l) => l.rate.toFixed()),
    lines.map((l) => l.per.toFixed()),
    lines.map((l) => l.amount.toFixed()),
    periods[0]!.budget_id,
    periods[0]!.period_start,
  ];
  return {
    async hold() {
      const { rows } = await db.query<{ id: string }>({ name: 'books_hold', text: HOLD, values });
      return rows[0]!.id;
    },
    async accept(taskId, vendorAnswer) {
      const accepted = acceptanceOf(JSON.parse(vendorAnswer));
      if (!accepted) throw new Error(`not an acceptance: ${vendorAnswer.slice(0, 200)}`);
      await db.query({
        name: 'books_accept',
        text: ACCEPT,
        values: [taskId, accepted.id, accepted.taskId, vendorAnswer],
      });
    },
  };
}
