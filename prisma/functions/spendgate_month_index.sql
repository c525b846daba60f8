-- spendgate_month_index: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_month_index(p_at timestamp with time zone)
 RETURNS integer
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
RETURN ((((EXTRACT(year FROM (p_at AT TIME ZONE 'UTC'::text)) - (1970)::numeric) * (12)::numeric) + EXTRACT(month FROM (p_at AT TIME ZONE 'UTC'::text))) - (1)::numeric)::integer;

COMMENT ON FUNCTION public.spendgate_month_index(p_at timestamp with time zone) IS 'Months since January 1970, in UTC: the high bits of a task id (spendgate_new_task_id), and so the task partition it lives in (decisions §18).';
