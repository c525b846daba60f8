-- spendgate_ledger_append_only: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261122000100_ledger_functions (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_ledger_append_only()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  RAISE EXCEPTION 'ledger_entry is append-only: % refused; post an adjustment instead', TG_OP
    USING ERRCODE = 'raise_exception';
END $function$;

COMMENT ON FUNCTION public.spendgate_ledger_append_only() IS 'Append-only: corrections are new entries, never edits.';
