-- spendgate_budget_balance: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261125200000_each_user_tasks_by_user (of 4).
CREATE OR REPLACE FUNCTION public.spendgate_budget_balance(p_budget uuid, p_subject text, p_start timestamp with time zone, p_end timestamp with time zone, OUT spent numeric, OUT held numeric)
 RETURNS record
 LANGUAGE plpgsql
 STABLE
 SET enable_seqscan TO 'off'
 SET jit TO 'off'
AS $function$
DECLARE
  b budget;
  more_spent numeric;
  more_held numeric;
BEGIN
  SELECT * INTO b FROM budget WHERE id = p_budget;
  IF b.scope = 'PROJECT' AND b.model_scope IS NULL THEN
    SELECT l.spent, l.held INTO spent, held FROM spendgate_ledger_balance(b.project_id, b.unit, p_start, p_end) l;
  ELSIF b.scope = 'EACH_USER' THEN
    -- The user's tasks by task_end_user_project (the project compared with IS NOT DISTINCT
    -- FROM, which no index serves, so no other index can be chosen), then each task's entries
    -- by its id (the fenced LATERAL): a plan left to choose drove from the ledger, reading every
    -- entry of the period, when cached while the tables were small or with statistics that made
    -- end_user look constant (reconcile of 1,000 users ran for minutes; a user's first balance
    -- took 0.5 ms).
    SELECT coalesce(sum(e.amount) FILTER (WHERE e.kind IN ('charge', 'adjustment')), 0),
           coalesce(sum(e.amount) FILTER (WHERE e.kind = 'hold'), 0) - coalesce(sum(e.amount) FILTER (WHERE e.kind = 'release'), 0)
    INTO spent, held
    FROM task t
    CROSS JOIN LATERAL (SELECT x.kind, x.amount FROM ledger_entry x
                        WHERE x.task_id = t.id AND x.unit = b.unit AND x.effective_at >= p_start AND x.effective_at < p_end
                        OFFSET 0) e
    WHERE t.end_user = p_subject AND t.project_id IS NOT DISTINCT FROM b.project_id
      AND spendgate_counts_model(b.model_scope, b.model_value, t.model, t.family, t.kind);
  ELSE
    SELECT coalesce(sum(e.amount) FILTER (WHERE e.kind IN ('charge', 'adjustment')), 0),
           coalesce(sum(e.amount) FILTER (WHERE e.kind = 'hold'), 0) - coalesce(sum(e.amount) FILTER (WHERE e.kind = 'release'), 0)
    INTO spent, held
    FROM ledger_entry e JOIN task t ON t.id = e.task_id
    WHERE e.project_id = b.project_id AND e.unit = b.unit AND e.effective_at >= p_start AND e.effective_at < p_end
      AND spendgate_budget_subject(b.scope, b.scope_key_id, b.scope_value, true, t.api_key_id, t.end_user, coalesce(t.tags, '{}'),
                                   b.model_scope, b.model_value, t.model, t.family, t.kind) = p_subject;
  END IF;
  -- Archived months (decisions §18): their entries are no longer here; what they added is. A month
  -- inside the window counts by who made its entries; a window holding part of an archived month
  -- (a day, a week; ended before the archive) has that part kept for it.
  IF EXISTS (SELECT 1 FROM archived_month) THEN
    SELECT coalesce(sum(a.spent), 0), coalesce(sum(a.held), 0) INTO more_spent, more_held
    FROM archived_spend a
    WHERE a.project_id = b.project_id AND a.unit = b.unit
      AND (a.month::timestamp AT TIME ZONE 'UTC') >= p_start AND ((a.month + interval '1 month')::timestamp AT TIME ZONE 'UTC') <= p_end
      AND ((b.scope = 'PROJECT' AND b.model_scope IS NULL)
           OR (a.has_task AND spendgate_budget_subject(b.scope, b.scope_key_id, b.scope_value, true, a.api_key_id, a.end_user, a.tags,
                                                       b.model_scope, b.model_value, a.model, a.family, a.kind) = p_subject));
    spent := spent + more_spent;
    held := held + more_held;
    SELECT coalesce(sum(x.spent), 0), coalesce(sum(x.held), 0) INTO more_spent, more_held
    FROM archived_balance x WHERE x.budget_id = p_budget AND x.subject = p_subject AND x.period_start = p_start;
    spent := spent + more_spent;
    held := held + more_held;
  END IF;
END $function$;

COMMENT ON FUNCTION public.spendgate_budget_balance(p_budget uuid, p_subject text, p_start timestamp with time zone, p_end timestamp with time zone, OUT spent numeric, OUT held numeric) IS 'An end user''s tasks are found by their end user only: task_end_user_project (end_user first) replaces task_project_end_user, and the project is compared with IS NOT DISTINCT FROM (the same for a project id, which is never null), which no index serves. Why: with statistics that make end_user look constant and hold no most-common values (what ANALYZE''s sample of a project whose users are equally busy can give), the planner saw both indexes returning every task of the project and chose a bitmap scan of the smaller (project_id, accepted_at) index, filtering end_user: every user''s balance read every task of the project (reconcile of 500 users on 50,000 tasks: 8.6 s instead of 0.15 s; CI hit it once). Now the only index that can answer the look-up is the one keyed by the user. JIT is off for it: the same statistics make its estimates large enough for PostgreSQL''s JIT (on in distributions'' builds, such as Debian''s 15) to compile every call, about 17 ms each (reconcile of 500 users: 4.5 s instead of 0.2 s on 15).';
