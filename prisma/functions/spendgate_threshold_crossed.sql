-- spendgate_threshold_crossed: when a movement crosses a budget's threshold, its one source (decisions §6). Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_threshold_crossed(p_limit numeric, p_threshold integer, p_before numeric, p_after numeric)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  SELECT p_before < p_limit * p_threshold / 100 AND p_after >= p_limit * p_threshold / 100
$function$;

COMMENT ON FUNCTION public.spendgate_threshold_crossed(p_limit numeric, p_threshold integer, p_before numeric, p_after numeric) IS 'A balance''s use (spent + held) crossed p_threshold percent of p_limit when it was below it before the movement and at or above it after: each crossing is recorded once per period and subject (budget_alert''s key). The three hold functions and spendgate_record_crossings (settlement, adjustments) ask it; inlined by PostgreSQL (one IMMUTABLE expression).';
