-- A task a contract makes free (decisions §19: held 0, charged 0) was counted by spendReport (its
-- roll-up row) and not by the bar's drill-down, which finds a task by its settlement's entries and
-- found none: nothing was held, so nothing was released, and a charge of 0 was not posted. Now
-- spendgate_settle and spendgate_resolve (prisma/functions) post a charge of 0 when there is no hold
-- to release, so every settled task has an entry at the instant its roll-up counted it (found by the money model's
-- tester, seed 1026170146; test/reports/bar-and-drill-down.test.ts).

-- Tasks settled so before, in months still open: their charge of 0 at their acceptance, which is
-- where their roll-up counted them (a month open now was open when they settled, unless it was
-- closed and reopened between). A closed month's entries are sealed and stay as they are.
INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at, belongs_to)
SELECT t.project_id, t.id, 'charge', t.unit, 0, t.accepted_at, NULL
FROM task t
WHERE t.settled_at IS NOT NULL AND t.status <> 'rejected' AND t.hold_amount = 0 AND t.charge_amount = 0
  AND spendgate_closed_month(t.accepted_at) IS NULL
  AND NOT EXISTS (SELECT 1 FROM ledger_entry e WHERE e.task_id = t.id AND e.kind IN ('charge', 'release'));
