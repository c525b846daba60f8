-- spendgate_closed_month: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261125170100_month_close_functions (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_closed_month(p_at timestamp with time zone)
 RETURNS date
 LANGUAGE sql
 STABLE
AS $function$
  SELECT c.month FROM month_close c
  WHERE c.month = date_trunc('month', p_at AT TIME ZONE 'UTC')::date AND c.reopened_at IS NULL
$function$;

COMMENT ON FUNCTION public.spendgate_closed_month(p_at timestamp with time zone) IS 'The closed month an instant belongs to, or NULL when its month is open.';
