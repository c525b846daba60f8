-- spendgate_counts_model: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_counts_model(p_model_scope "ModelScope", p_model_value text, p_model text, p_family text, p_kind text)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  SELECT p_model_scope IS NULL
         OR p_model_value IS NOT DISTINCT FROM CASE p_model_scope WHEN 'MODEL' THEN p_model WHEN 'FAMILY' THEN p_family ELSE p_kind END
$function$;

COMMENT ON FUNCTION public.spendgate_counts_model(p_model_scope "ModelScope", p_model_value text, p_model text, p_family text, p_kind text) IS 'Whether a budget on part of the catalog (decisions §20) counts a task of this model, family and kind; a budget without a model scope counts every task. The one rule spendgate_budget_subject and the look-ups of an end user''s tasks apply.';
