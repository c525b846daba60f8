-- spendgate_charge_line_fixed: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261123132500_quote_and_lines_fixed (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_charge_line_fixed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  RAISE EXCEPTION 'charge_line is written once, at settlement: % refused; post an adjustment instead', TG_OP
    USING ERRCODE = 'raise_exception';
END $function$;

COMMENT ON FUNCTION public.spendgate_charge_line_fixed() IS 'Hand-written. What a task was quoted and held at is fixed when the hold writes it, and a charge''s lines when settlement writes them: the ledger''s entries and the budget periods were computed from those figures, so changing one afterwards would make them disagree. Corrections are ledger adjustments, as for ledger_entry (append-only since the ledger_functions migration). The task trigger names its columns (UPDATE OF …), so PostgreSQL fires it only for an UPDATE whose SET list names one of them: the updates on the submission path (record, settle, reject, poll scheduling) name none and do not run it. They still pay PostgreSQL''s handling of a BEFORE ROW trigger on the table (it locks the row before deciding which triggers fire): measured ≈2 µs per single-row update (35.6–38.2 µs against 34.3–35.9 without the trigger, alternated). An AFTER trigger measured no cheaper here (35.8–41.6 µs) and would fire after the write.';
