-- 20261124110000 made a user's balance find entries by `task_id = ANY(the user's task ids)`; a
-- plan cached while the tables were small answered that from the (project, unit, effective_at)
-- index with a filter, reading every entry of the period on each call (0.5 ms a call on 100,000
-- users in the hold's test load, growing with the ledger). Each of the user's tasks now looks its
-- entries up by its own id through a fenced LATERAL, which leaves the planner no other index.
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
    -- The user's tasks (task_project_end_user), then each task's entries by its id (the fenced
    -- LATERAL): a plan left to choose drove from the ledger, reading every entry of the period,
    -- when cached while the tables were small or with statistics that made end_user look
    -- constant (reconcile of 1,000 users ran for minutes; a user's first balance took 0.5 ms).
    SELECT coalesce(sum(e.amount) FILTER (WHERE e.kind IN ('charge', 'adjustment')), 0),
           coalesce(sum(e.amount) FILTER (WHERE e.kind = 'hold'), 0) - coalesce(sum(e.amount) FILTER (WHERE e.kind = 'release'), 0)
    INTO spent, held
    FROM task t
    CROSS JOIN LATERAL (SELECT x.kind, x.amount FROM ledger_entry x
                        WHERE x.task_id = t.id AND x.unit = b.unit AND x.effective_at >= p_start AND x.effective_at < p_end
                        OFFSET 0) e
    WHERE t.project_id = b.project_id AND t.end_user = p_subject;
  ELSE
    SELECT coalesce(sum(e.amount) FILTER (WHERE e.kind IN ('charge', 'adjustment')), 0),
           coalesce(sum(e.amount) FILTER (WHERE e.kind = 'hold'), 0) - coalesce(sum(e.amount) FILTER (WHERE e.kind = 'release'), 0)
    INTO spent, held
    FROM ledger_entry e JOIN task t ON t.id = e.task_id
    WHERE e.project_id = b.project_id AND e.unit = b.unit AND e.effective_at >= p_start AND e.effective_at < p_end
      AND spendgate_budget_subject(b.scope, b.scope_key_id, b.scope_value, true, t.api_key_id, t.end_user, coalesce(t.tags, '{}')) = p_subject;
  END IF;
END $function$;
