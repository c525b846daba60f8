-- spendgate_ledger_balance: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261122000100_ledger_functions (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_ledger_balance(p_project uuid, p_unit "Unit", p_start timestamp with time zone, p_end timestamp with time zone, OUT spent numeric, OUT held numeric)
 RETURNS record
 LANGUAGE sql
 STABLE
AS $function$
  SELECT coalesce(sum(amount) FILTER (WHERE kind IN ('charge', 'adjustment')), 0),
         coalesce(sum(amount) FILTER (WHERE kind = 'hold'), 0) - coalesce(sum(amount) FILTER (WHERE kind = 'release'), 0)
  FROM ledger_entry
  WHERE project_id = p_project AND unit = p_unit AND effective_at >= p_start AND effective_at < p_end;
$function$;

COMMENT ON FUNCTION public.spendgate_ledger_balance(p_project uuid, p_unit "Unit", p_start timestamp with time zone, p_end timestamp with time zone, OUT spent numeric, OUT held numeric) IS 'What the ledger says a project''s balance is in one unit and window: the derivation that budget_period rows must always equal (spendgate reconcile checks it).';
