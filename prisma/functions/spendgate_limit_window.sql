-- spendgate_limit_window: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_limit_window(p_kind "LimitKind", p_at timestamp with time zone)
 RETURNS timestamp with time zone
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  SELECT CASE WHEN p_kind = 'TASKS_IN_FLIGHT' THEN timestamptz 'epoch' ELSE date_trunc('minute', p_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' END
$function$;

COMMENT ON FUNCTION public.spendgate_limit_window(p_kind "LimitKind", p_at timestamp with time zone) IS 'Limits (decisions §20): the window a limit counts in at a time: its UTC minute, or for tasks in flight none (the epoch: one count, raised by admissions and lowered as tasks end).';
