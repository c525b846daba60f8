-- spendgate_post_at: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261125170100_month_close_functions (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_post_at(p_at timestamp with time zone)
 RETURNS timestamp with time zone
 LANGUAGE plpgsql
AS $function$
DECLARE
  m date := date_trunc('month', p_at AT TIME ZONE 'UTC')::date;
  moved boolean := false;
BEGIN
  LOCK TABLE month_close IN ROW SHARE MODE;
  WHILE EXISTS (SELECT 1 FROM month_close c WHERE c.month = m AND c.reopened_at IS NULL) LOOP
    m := (m + interval '1 month')::date;
    moved := true;
  END LOOP;
  RETURN CASE WHEN moved THEN m::timestamp AT TIME ZONE 'UTC' ELSE p_at END;
END $function$;

COMMENT ON FUNCTION public.spendgate_post_at(p_at timestamp with time zone) IS 'Where a movement meant for `p_at` is posted: `p_at` itself while its month is open; else the first instant of the first open month after it. Takes month_close in ROW SHARE mode (held to the end of the transaction): callers take it before any row or project lock, as a close takes EXCLUSIVE first, so the two never wait for each other in a circle.';
