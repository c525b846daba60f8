/**
 * Reconciliation: every stored budget balance (for every scope, and every user of an EACH_USER
 * budget) must equal what the ledger entries say, and every
 * settled task (by the vendor's answer or an operator's resolution) must have no hold left, and
 * every stored amount must lie within the bounds amounts enter by (decisions §16: 12 digits before
 * the point, 18 after), whichever path wrote it. Returns the differences (empty when all is clean).
 */
import { MAX_DECIMALS, MAX_INTEGER_DIGITS } from '../pricing/bounds.js';
import type { Database } from '../database/database.js';

export interface Difference {
  what: string;
  stored: string;
  fromLedger: string;
}

export async function reconcile(db: Database): Promise<Difference[]> {
  const budgets = await db.query<{
    budget_id: string;
    period_start: Date;
    subject: string;
    field: string;
    stored: string;
    ledger: string;
  }>(`
    SELECT bp.budget_id, bp.period_start, bp.subject, f.field, f.stored::text AS stored, f.ledger::text AS ledger
    FROM budget_period bp
    JOIN budget b ON b.id = bp.budget_id AND b.deleted_at IS NULL
    CROSS JOIN LATERAL spendgate_budget_balance(b.id, bp.subject, bp.period_start, bp.period_end) l
    CROSS JOIN LATERAL (VALUES ('spent', bp.spent, l.spent), ('held', bp.held, l.held)) AS f(field, stored, ledger)
    WHERE f.stored <> f.ledger
    ORDER BY bp.budget_id, bp.period_start, bp.subject`);
  const tasks = await db.query<{ id: string; status: string; held: string }>(`
    SELECT t.id::text, t.status::text,
           (coalesce(sum(e.amount) FILTER (WHERE e.kind = 'hold'), 0) - coalesce(sum(e.amount) FILTER (WHERE e.kind = 'release'), 0))::text AS held
    FROM task t LEFT JOIN ledger_entry e ON e.task_id = t.id
    WHERE t.status IN ('ready', 'failed', 'rejected') OR t.settled_at IS NOT NULL
    GROUP BY t.id HAVING coalesce(sum(e.amount) FILTER (WHERE e.kind = 'hold'), 0)
                        <> coalesce(sum(e.amount) FILTER (WHERE e.kind = 'release'), 0)`);
  const outOfBounds = await db.query<{ what: string; amount: string }>(
    `WITH amounts(what, amount) AS (
       SELECT 'ledger entry ' || id || ' (' || kind || ')', amount FROM ledger_entry
       UNION ALL SELECT 'task ' || id || ' ' || f.name, f.amount FROM task, LATERAL (VALUES ('estimate', estimate_amount), ('hold', hold_amount), ('charge', charge_amount), ('overrun', overrun)) f(name, amount)
       UNION ALL SELECT 'vendor statement ' || statement_id || ' line ' || line_no, amount FROM vendor_statement_line
       UNION ALL SELECT 'vendor difference ' || id || ' ' || f.name, f.amount FROM vendor_recon_item, LATERAL (VALUES ('ours', ours), ('theirs', theirs), ('difference', difference)) f(name, amount)
       UNION ALL SELECT 'budget ' || id || ' limit', "limit" FROM budget WHERE deleted_at IS NULL)
     SELECT what, amount::text FROM amounts WHERE abs(amount) >= 10::numeric ^ $1 OR scale(trim_scale(amount)) > $2 ORDER BY what LIMIT 1000`,
    [MAX_INTEGER_DIGITS, MAX_DECIMALS],
  );
  return [
    ...outOfBounds.rows.map((r) => ({
      what: `${r.what}: an amount outside the bounds (${MAX_INTEGER_DIGITS} digits before the point, ${MAX_DECIMALS} after)`,
      stored: r.amount,
      fromLedger: 'within bounds',
    })),
    ...budgets.rows.map((r) => ({
      what: `budget ${r.budget_id} period ${r.period_start.toISOString()}${r.subject ? ` user ${r.subject}` : ''} ${r.field}`,
      stored: r.stored,
      fromLedger: r.ledger,
    })),
    ...tasks.rows.map((r) => ({ what: `task ${r.id} (${r.status}) still holds`, stored: r.held, fromLedger: '0' })),
  ];
}
