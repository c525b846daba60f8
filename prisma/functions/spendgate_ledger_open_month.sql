-- spendgate_ledger_open_month: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261125170100_month_close_functions (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_ledger_open_month()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  -- An entry moved between partitions (spendgate_month_partition) was checked when it was written.
  IF current_setting('spendgate.moving_rows', true) = 'on' THEN RETURN NEW; END IF;
  LOCK TABLE month_close IN ROW SHARE MODE;
  IF spendgate_closed_month(NEW.effective_at) IS NOT NULL THEN
    RAISE EXCEPTION 'the month % is closed: no ledger entry may be written in it (post it in the first open month)',
      to_char(NEW.effective_at AT TIME ZONE 'UTC', 'YYYY-MM') USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $function$;

COMMENT ON FUNCTION public.spendgate_ledger_open_month() IS 'The last line of defence, whatever path writes: no entry inside a closed month. Only entries dated before the current month reach the function (the WHEN costs the submission path nothing).';
