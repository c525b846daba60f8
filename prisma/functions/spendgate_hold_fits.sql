-- spendgate_hold_fits: the admission rule, its one source (decisions §4). Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_hold_fits(p_hard boolean, p_limit numeric, p_spent numeric, p_held numeric, p_amount numeric)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  SELECT NOT p_hard OR p_spent + p_held + p_amount <= p_limit
$function$;

COMMENT ON FUNCTION public.spendgate_hold_fits(p_hard boolean, p_limit numeric, p_spent numeric, p_held numeric, p_amount numeric) IS 'The admission rule (decisions §4), written once: a hold of p_amount fits a balance (spent and held in its period) unless the budget is hard and the three together pass its limit; reaching the limit exactly fits. spendgate_hold_one, spendgate_place_holds (batch and new end users) and spendgate_place_holds_in_order all ask it, and test/budgets/admission.test.ts compares the three with a TypeScript statement of it. One SELECT of an expression, IMMUTABLE: PostgreSQL inlines it into each statement (no call per row).';
