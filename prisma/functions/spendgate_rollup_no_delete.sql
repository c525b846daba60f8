-- spendgate_rollup_no_delete: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261122045700_spend_rollup_total_trigger (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_rollup_no_delete()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  RAISE EXCEPTION 'spend_rollup rows are never deleted (spend_rollup_total is kept from their changes)';
END $function$;

COMMENT ON FUNCTION public.spendgate_rollup_no_delete() IS 'Deleting a roll-up row would leave the total behind it: refuse deletes.';
