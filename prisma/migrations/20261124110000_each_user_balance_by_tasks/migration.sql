-- An EACH_USER balance from the ledger (reconcile, a user's first balance of a period) finds the
-- user's tasks first and their entries by task id: the plan PostgreSQL cached for the old join
-- could read every entry of the project once per user (bench:budget's reconcile of 1,000 users
-- on 364,000 tasks ran for more than 10 minutes). Sequential scans are off for the function, as
-- for the hold's: its statements look rows up by key.
CREATE OR REPLACE FUNCTION public.spendgate_budget_balance(p_budget uuid, p_subject text, p_start timestamp with time zone, p_end timestamp with time zone, OUT spent numeric, OUT held numeric)
 RETURNS record
 LANGUAGE plpgsql
 STABLE
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
  b budget;
BEGIN
  SELECT * INTO b FROM budget WHERE id = p_budget;
  IF b.scope = 'PROJECT' THEN
    SELECT l.spent, l.held INTO spent, held FROM spendgate_ledger_balance(b.project_id, b.unit, p_start, p_end) l;
  ELSIF b.scope = 'EACH_USER' THEN
    -- The user's tasks first (task_project_end_user), then their entries.
    -- By task id only: joined on the project too, a plan cached while the tables were small read
    -- every entry of the project for each user (reconcile of 1,000 users ran for minutes).
    SELECT coalesce(sum(e.amount) FILTER (WHERE e.kind IN ('charge', 'adjustment')), 0),
           coalesce(sum(e.amount) FILTER (WHERE e.kind = 'hold'), 0) - coalesce(sum(e.amount) FILTER (WHERE e.kind = 'release'), 0)
    INTO spent, held
    FROM ledger_entry e
    WHERE e.task_id = ANY (ARRAY(SELECT t.id FROM task t WHERE t.project_id = b.project_id AND t.end_user = p_subject))
      AND e.unit = b.unit AND e.effective_at >= p_start AND e.effective_at < p_end;
  ELSE
    SELECT coalesce(sum(e.amount) FILTER (WHERE e.kind IN ('charge', 'adjustment')), 0),
           coalesce(sum(e.amount) FILTER (WHERE e.kind = 'hold'), 0) - coalesce(sum(e.amount) FILTER (WHERE e.kind = 'release'), 0)
    INTO spent, held
    FROM ledger_entry e JOIN task t ON t.id = e.task_id
    WHERE e.project_id = b.project_id AND e.unit = b.unit AND e.effective_at >= p_start AND e.effective_at < p_end
      AND spendgate_budget_subject(b.scope, b.scope_key_id, b.scope_value, true, t.api_key_id, t.end_user, coalesce(t.tags, '{}')) = p_subject;
  END IF;
END $function$;
