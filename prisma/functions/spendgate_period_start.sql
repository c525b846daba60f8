-- spendgate_period_start: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261123221600_user_rollup_ledger (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_period_start(p "Period", at timestamp with time zone)
 RETURNS timestamp with time zone
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  SELECT CASE p
           WHEN 'DAILY' THEN date_trunc('day', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
           WHEN 'WEEKLY' THEN date_trunc('week', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
           WHEN 'MONTHLY' THEN date_trunc('month', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
           ELSE timestamptz '1970-01-01 00:00:00+00'
         END;
$function$;

COMMENT ON FUNCTION public.spendgate_period_start(p "Period", at timestamp with time zone) IS 'The start of the budget period containing `at` (spendgate_period_window''s start), as an expression the planner inlines.';
