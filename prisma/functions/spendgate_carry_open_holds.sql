-- spendgate_carry_open_holds: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261125170100_month_close_functions (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_carry_open_holds(p_month date)
 RETURNS TABLE(task_id bigint, model text, unit "Unit", amount numeric, accepted_at timestamp with time zone, project_id uuid)
 LANGUAGE plpgsql
AS $function$
DECLARE
  m_start timestamptz := p_month::timestamp AT TIME ZONE 'UTC';
  m_end timestamptz := (p_month + interval '1 month')::timestamp AT TIME ZONE 'UTC';
  label text := to_char(p_month, 'YYYY-MM');
  r record;
BEGIN
  FOR r IN
    SELECT t.*, h.at AS held_at, h.amount AS held
    FROM (SELECT e.task_id AS id, max(e.effective_at) AS at FROM ledger_entry e
          WHERE e.kind = 'hold' AND e.effective_at >= m_start AND e.effective_at < m_end AND e.task_id IS NOT NULL
          GROUP BY e.task_id) o
    JOIN task t ON t.id = o.id
    CROSS JOIN LATERAL (SELECT e.effective_at AS at, e.amount FROM ledger_entry e WHERE e.task_id = t.id AND e.kind = 'hold' AND e.effective_at = o.at) h
    WHERE t.settled_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM ledger_entry l WHERE l.task_id = t.id AND l.kind = 'hold' AND l.effective_at >= m_end)
    ORDER BY t.project_id, t.id
  LOOP
    PERFORM spendgate_lock_project(r.project_id);
    INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at, reason)
    VALUES (r.project_id, r.id, 'release', r.unit, r.held, r.held_at, 'open at the close of ' || label || ': carried to the next month');
    PERFORM spendgate_apply_to_budgets(r.project_id, r.unit, true, r.api_key_id, r.end_user, r.tags, r.model, r.family, r.kind, r.held_at, r.held, 0);
    INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at, reason)
    VALUES (r.project_id, r.id, 'hold', r.unit, r.held, m_end, 'carried from ' || label || ', open at its close');
    PERFORM spendgate_apply_to_budgets(r.project_id, r.unit, true, r.api_key_id, r.end_user, r.tags, r.model, r.family, r.kind, m_end, -r.held, 0);
    task_id := r.id; model := r.model; unit := r.unit; amount := r.held; accepted_at := r.accepted_at; project_id := r.project_id;
    RETURN NEXT;
  END LOOP;
END $function$;

COMMENT ON FUNCTION public.spendgate_carry_open_holds(p_month date) IS 'At close, every hold still open in the month (a task not settled whose latest hold is in it) moves to the first instant of the next month: a release in the month, a hold in the next, both in every budget''s balances. The month then holds only what was settled in it; the statement lists what was carried as open items (an accrual). Called by the close, under its lock.';
