-- spendgate_adjust: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261125180100_early_warning_functions (of 4).
CREATE OR REPLACE FUNCTION public.spendgate_adjust(p_project uuid, p_unit "Unit", p_amount numeric, p_reason text, p_task bigint, p_at timestamp with time zone)
 RETURNS bigint
 LANGUAGE plpgsql
AS $function$
DECLARE
  entry bigint;
  t task;
  post timestamptz;
  belongs date;
  v_day date;
BEGIN
  IF p_reason IS NULL OR length(trim(p_reason)) = 0 THEN
    RAISE EXCEPTION 'an adjustment needs a reason';
  END IF;
  LOCK TABLE month_close IN ROW SHARE MODE;
  PERFORM spendgate_lock_project(p_project);
  -- An adjustment meant for a closed month is a prior-period item of the first open one.
  post := spendgate_post_at(p_at);
  belongs := spendgate_closed_month(p_at);
  v_day := (post AT TIME ZONE 'UTC')::date;
  IF p_task IS NOT NULL THEN SELECT * INTO t FROM task WHERE id = p_task; END IF;
  INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at, reason, belongs_to)
  VALUES (p_project, p_task, 'adjustment', p_unit, p_amount, post, p_reason, belongs) RETURNING id INTO entry;
  PERFORM spendgate_apply_to_budgets(p_project, p_unit, p_task IS NOT NULL, t.api_key_id, t.end_user, t.tags, t.model, t.family, t.kind, post, 0, p_amount);
  -- Reports read the roll-ups, so an adjustment lands there too (on its task's model, if any).
  -- A credit is kept apart as well, so amount + credit and credit only grow (decisions §21: /metrics/books).
  INSERT INTO spend_rollup AS s (day, project_id, model, unit, status, amount, credit)
  VALUES (v_day, p_project, coalesce(t.model, '(adjustment)'), p_unit, CASE WHEN belongs IS NULL THEN 'adjustment' ELSE 'prior_period' END, p_amount, greatest(-p_amount, 0))
  ON CONFLICT (day, project_id, model, unit, status) DO UPDATE SET amount = s.amount + EXCLUDED.amount, credit = s.credit + EXCLUDED.credit;
  PERFORM spendgate_rollup_by_add(p_project, coalesce(t.model, '(adjustment)'), p_unit, coalesce(t.price_book_version, 0), v_day,
                                  (SELECT k.prefix FROM api_key k WHERE k.id = t.api_key_id), t.end_user, t.tags,
                                  0, 0, p_amount, '{}'::jsonb);
  IF belongs IS NULL THEN
    PERFORM spendgate_hourly_add(p_project, (SELECT k.prefix FROM api_key k WHERE k.id = t.api_key_id), t.end_user, p_unit, post, p_amount, 0);
  END IF;
  RETURN entry;
END $function$;

COMMENT ON FUNCTION public.spendgate_adjust(p_project uuid, p_unit "Unit", p_amount numeric, p_reason text, p_task bigint, p_at timestamp with time zone) IS 'Early warning (decisions §15): spend per hour of acceptance for each project, key and end user, kept with every settlement and adjustment (one statement, three rows); the forecasts and the anomaly detector read it, never raw tasks.';
