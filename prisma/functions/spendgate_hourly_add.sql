-- spendgate_hourly_add: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261125180100_early_warning_functions (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_hourly_add(p_project uuid, p_key text, p_user text, p_unit "Unit", p_at timestamp with time zone, p_amount numeric, p_tasks integer)
 RETURNS void
 LANGUAGE sql
AS $function$
  INSERT INTO spend_hourly AS s (hour, dimension, project_id, value, unit, amount, tasks)
  VALUES (date_trunc('hour', p_at, 'UTC'), 'project', p_project, '', p_unit, p_amount, p_tasks),
         (date_trunc('hour', p_at, 'UTC'), 'apiKey', p_project, coalesce(p_key, ''), p_unit, p_amount, p_tasks),
         (date_trunc('hour', p_at, 'UTC'), 'user', p_project, coalesce(p_user, ''), p_unit, p_amount, p_tasks)
  ON CONFLICT (hour, dimension, project_id, value, unit) DO UPDATE SET amount = s.amount + EXCLUDED.amount, tasks = s.tasks + EXCLUDED.tasks;
$function$;

COMMENT ON FUNCTION public.spendgate_hourly_add(p_project uuid, p_key text, p_user text, p_unit "Unit", p_at timestamp with time zone, p_amount numeric, p_tasks integer) IS 'Early warning (decisions §15): spend per hour of acceptance for each project, key and end user, kept with every settlement and adjustment (one statement, three rows); the forecasts and the anomaly detector read it, never raw tasks. Whole UTC hours whatever the session''s TimeZone (date_trunc''s zone argument): in a zone of half hours the hour was keyed at half past, where the anomaly detector never looks.';
