/**
 * Matching a statement against the ledger (decisions §14), in SQL over the whole statement at
 * once, by vendor task id, exact decimals, per unit. Our side of a task is its net: the charge plus
 * its adjustments (resolutions, earlier acceptances). Classes:
 *   matched          the same amount in the same unit;
 *   amount_differs   ours, theirs and the difference (the vendor's minus ours); a unit that differs
 *                    too has no difference and is for a person;
 *   billed_again     an earlier statement billed the same task (another time, amount or unit: the
 *                    same row again is skipped at import): double billing, or a corrected re-send;
 *   pending          our task is still held (in flight, unknown): the statement may settle it;
 *   billed_not_ours  no task of ours has that id: listed, moves no money;
 *   duplicate        the statement bills one task more than once;
 *   ours_not_billed  a settled task with a charge, accepted within the statement's days, that no
 *                    statement bills (listed once, by the first statement that could have; closed
 *                    when a later statement bills it: closeBilledSince).
 * Every class but matched is an item for a person; amount_differs, billed_again and pending put the task under
 * review (task.needs_review). The summary holds counts and sums per class and unit, and totals by
 * day and model for both sides.
 */
import type { Database } from '../database/database.js';

/** Why a task is under review after a statement. */
export const REASON = "the vendor's statement differs from our figure (vendor reconciliation)";
/** The classes that put a task under review (an `ours_not_billed` item is finance's, not the task's). */
export const REVIEW_CLASSES = `('amount_differs', 'billed_again', 'pending')`;

/** The lock every import holds to its end; an acceptance that takes a charge back holds it too. */
export async function lockImports(db: Pick<Database, 'query'>): Promise<void> {
  await db.query(`SELECT pg_advisory_xact_lock(hashtext('spendgate: vendor statement import'))`);
}

/**
 * "Ours, not billed" holds only while no statement bills the task. A later file can bill it: the
 * next day's export, where the vendor put a task we accepted just before midnight, or a re-send
 * with a row the first left out. Its figure is then that statement's to match, and the item is
 * closed (accepted, no money moved, naming the statement): left open, taking it would take back a
 * charge the vendor did bill. Every open such item is looked at, not only this file's tasks, so an
 * item left open before this rule is closed by the next import. Run under the imports' lock.
 */
async function closeBilledSince(db: Database, who: string): Promise<void> {
  await db.query(
    `UPDATE vendor_recon_item i SET state = 'accepted', resolved_by = $1, resolved_at = clock_timestamp(),
            note = 'closed: statement ' || b.statement_id || ' bills this task (' || b.day || '), where its figure is matched; nothing taken back'
     FROM vendor_recon_item o CROSS JOIN LATERAL (${FIRST_BILLED}) b
     WHERE o.class = 'ours_not_billed' AND o.state = 'open' AND i.id = o.id`,
    [who],
  );
}

/**
 * The statement that first billed a vendor task (by import, then line) and the day it billed it,
 * one indexed look-up, LATERAL over a row `o` with a vendor_task_id: what closes an "ours, not
 * billed" (closeBilledSince) and what refuses taking one (billedSince). A constant, not a function
 * of the column, so that every query using it is read and prepared by queries-prepare.test.ts.
 */
const FIRST_BILLED = `SELECT l.statement_id::text AS statement_id, to_char(l.billed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day
   FROM vendor_statement_line l JOIN vendor_statement s ON s.id = l.statement_id
   WHERE l.vendor_task_id = o.vendor_task_id ORDER BY s.imported_at, l.line_no LIMIT 1`;

/** The statement that first billed this vendor task, and its day; undefined when none does. */
export async function billedSince(
  db: Pick<Database, 'query'>,
  vendorTaskId: string | null,
): Promise<{ statement: string; day: string } | undefined> {
  const { rows } = await db.query<{ statement: string; day: string }>(
    `SELECT b.statement_id AS statement, b.day FROM (SELECT $1::bigint AS vendor_task_id) o CROSS JOIN LATERAL (${FIRST_BILLED}) b`,
    [vendorTaskId],
  );
  return rows[0];
}

export async function matchStatement(db: Database, id: string, who: string): Promise<void> {
  await db.query(
    `CREATE TEMP TABLE statement_match ON COMMIT DROP AS
     WITH l AS (SELECT vendor_task_id, model, billed_at, unit, amount FROM vendor_statement_line WHERE statement_id = $1),
     dup AS (SELECT vendor_task_id FROM l GROUP BY vendor_task_id HAVING count(*) > 1),
     adj AS (SELECT task_id, sum(amount) AS amount FROM ledger_entry WHERE kind = 'adjustment' AND task_id IS NOT NULL GROUP BY task_id)
     SELECT l.vendor_task_id, t.id AS task_id, t.project_id, coalesce(l.model, t.model) AS model, l.billed_at AS at, l.unit, t.unit AS our_unit,
            l.amount AS theirs, CASE WHEN t.settled_at IS NOT NULL THEN coalesce(t.charge_amount, 0) + coalesce(a.amount, 0) END AS ours,
            CASE WHEN d.vendor_task_id IS NOT NULL THEN 'duplicate'
                 WHEN t.id IS NULL THEN 'billed_not_ours'
                 WHEN EXISTS (SELECT 1 FROM vendor_statement_line o WHERE o.vendor_task_id = l.vendor_task_id AND o.statement_id <> $1) THEN 'billed_again'
                 WHEN t.settled_at IS NULL THEN 'pending'
                 WHEN t.unit = l.unit AND coalesce(t.charge_amount, 0) + coalesce(a.amount, 0) = l.amount THEN 'matched'
                 ELSE 'amount_differs' END AS class
     FROM l LEFT JOIN dup d USING (vendor_task_id) LEFT JOIN task_upstream u ON u.upstream_task_id = l.vendor_task_id LEFT JOIN task t ON t.id = u.task_id LEFT JOIN adj a ON a.task_id = t.id`,
    [id],
  );
  // Ours, never billed: settled tasks with a charge in the statement's days that no statement names.
  await db.query(
    `INSERT INTO statement_match (vendor_task_id, task_id, project_id, model, at, unit, our_unit, theirs, ours, class)
     SELECT t.upstream_task_id, t.id, t.project_id, t.model, t.accepted_at, t.unit, t.unit, NULL, coalesce(t.charge_amount, 0) + coalesce(a.amount, 0), 'ours_not_billed'
     FROM vendor_statement s
     JOIN task t ON t.accepted_at >= date_trunc('day', s.period_from, 'UTC') AND t.accepted_at < date_trunc('day', s.period_to, 'UTC') + interval '1 day'
     LEFT JOIN (SELECT task_id, sum(amount) AS amount FROM ledger_entry WHERE kind = 'adjustment' AND task_id IS NOT NULL GROUP BY task_id) a ON a.task_id = t.id
     WHERE s.id = $1 AND t.upstream_task_id IS NOT NULL AND t.settled_at IS NOT NULL AND coalesce(t.charge_amount, 0) + coalesce(a.amount, 0) <> 0
       AND NOT EXISTS (SELECT 1 FROM vendor_statement_line v WHERE v.vendor_task_id = t.upstream_task_id)
       AND NOT EXISTS (SELECT 1 FROM vendor_recon_item i WHERE i.task_id = t.id AND i.class = 'ours_not_billed')`,
    [id],
  );
  // The items a person decides: one per task (a duplicate: one per task, the statement's total).
  await db.query(
    `INSERT INTO vendor_recon_item (statement_id, class, vendor_task_id, task_id, project_id, model, unit, ours, theirs, difference)
     SELECT $1, class, vendor_task_id, min(task_id), (array_agg(project_id))[1], min(model), unit, min(ours), sum(theirs),
            CASE WHEN class IN ('amount_differs', 'billed_again') AND min(our_unit::text) = unit::text THEN sum(theirs) - min(ours) END
     FROM statement_match WHERE class <> 'matched'
     GROUP BY class, vendor_task_id, unit`,
    [id],
  );
  await closeBilledSince(db, who);
  await db.query(
    `UPDATE vendor_statement SET summary = jsonb_build_object(
       'classes', (SELECT coalesce(jsonb_agg(jsonb_build_object('class', class, 'unit', unit, 'count', n, 'theirs', theirs, 'ours', ours) ORDER BY class, unit), '[]')
                   FROM (SELECT class, unit, count(*) AS n, coalesce(sum(theirs), 0)::text AS theirs, coalesce(sum(ours), 0)::text AS ours FROM statement_match GROUP BY class, unit) c),
       'byDayModel', (SELECT coalesce(jsonb_agg(jsonb_build_object('day', day, 'model', model, 'unit', unit, 'theirs', theirs, 'ours', ours, 'difference', diff) ORDER BY day, model, unit), '[]')
                      FROM (SELECT to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, coalesce(model, '-') AS model, unit,
                                   coalesce(sum(theirs), 0)::text AS theirs, coalesce(sum(ours) FILTER (WHERE class <> 'pending'), 0)::text AS ours,
                                   (coalesce(sum(theirs), 0) - coalesce(sum(ours) FILTER (WHERE class <> 'pending'), 0))::text AS diff
                            FROM statement_match GROUP BY 1, 2, 3) d))
     WHERE id = $1`,
    [id],
  );
  // Under review: the tasks whose figure differs, or that the statement may settle. A task already
  // announced for review once is announced again for this statement; one never announced is
  // announced by the update below (the task trigger, spendgate_task_event).
  const review = `SELECT DISTINCT task_id FROM vendor_recon_item WHERE statement_id = $1::uuid AND class IN ${REVIEW_CLASSES} AND task_id IS NOT NULL`;
  await db.query(
    `SELECT spendgate_emit('task.needs_review', t.project_id, 'review:' || t.id || ':vendor:' || $1::text,
            jsonb_build_object('project', (SELECT jsonb_build_object('id', p.id, 'name', p.name) FROM project p WHERE p.id = t.project_id),
                               'task', jsonb_build_object('id', 'gw-' || t.id, 'taskId', t.upstream_task_id::text, 'model', t.model, 'unit', t.unit,
                                                          'hold', t.hold_amount::text, 'charge', t.charge_amount::text),
                               'reason', $2::text))
     FROM task t WHERE t.id IN (${review}) AND EXISTS (SELECT 1 FROM outbox_event o WHERE o.cause = 'review:' || t.id)`,
    [id, REASON],
  );
  await db.query(
    `UPDATE task t SET needs_review = true, updated_at = clock_timestamp(), review_reason = CASE WHEN t.needs_review THEN t.review_reason ELSE $2 END
     WHERE t.id IN (${review})`,
    [id, REASON],
  );
}
