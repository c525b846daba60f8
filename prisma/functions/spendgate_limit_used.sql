-- spendgate_limit_used: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_limit_used(p_row_window timestamp with time zone, p_row_used bigint, p_window timestamp with time zone)
 RETURNS bigint
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  SELECT CASE WHEN p_row_window >= p_window THEN p_row_used ELSE 0 END
$function$;

COMMENT ON FUNCTION public.spendgate_limit_used(p_row_window timestamp with time zone, p_row_used bigint, p_window timestamp with time zone) IS 'Limits (decisions §20): what a request of minute p_window finds counted in its limit''s row (limit_use, one per limit and subject): the row''s count when the row is at that minute or a later one, else 0 (a new minute begins). The row then stays at greatest(its minute, the request''s). So a request whose hold waited on the project''s lock across a minute''s turn, while another of the next minute was counted, is counted in the row''s minute: every admitted request is counted in one minute, and no minute counts past the amount (before, the batch path moved the row back and the newer minute''s count was lost). The one rule of spendgate_limit_refusal, spendgate_take_limits and spendgate_place_holds.';
