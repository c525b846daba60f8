-- spendgate_period_window: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261123233000_period_window_start (of 2).
CREATE OR REPLACE FUNCTION public.spendgate_period_window(p "Period", at timestamp with time zone, OUT period_start timestamp with time zone, OUT period_end timestamp with time zone)
 RETURNS record
 LANGUAGE sql
 IMMUTABLE
AS $function$
  SELECT w.s, CASE p
                WHEN 'DAILY' THEN ((w.s AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC'
                WHEN 'WEEKLY' THEN ((w.s AT TIME ZONE 'UTC') + interval '1 week') AT TIME ZONE 'UTC'
                WHEN 'MONTHLY' THEN ((w.s AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC'
                ELSE timestamptz '10000-01-01 00:00:00+00'
              END
  FROM (SELECT spendgate_period_start(p, at) AS s) w;
$function$;

COMMENT ON FUNCTION public.spendgate_period_window(p "Period", at timestamp with time zone, OUT period_start timestamp with time zone, OUT period_end timestamp with time zone) IS 'One definition of where a budget period starts: spendgate_period_window takes its start from spendgate_period_start (20261123221600_user_rollup_ledger), which the hold inlines, instead of a second copy of the same CASE. Same windows as before.';
