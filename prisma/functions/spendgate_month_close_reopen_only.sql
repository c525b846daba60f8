-- spendgate_month_close_reopen_only: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261125170100_month_close_functions (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_month_close_reopen_only()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF TG_OP = 'DELETE' OR OLD.reopened_at IS NOT NULL OR NEW.month <> OLD.month OR NEW.closed_at <> OLD.closed_at
     OR NEW.closed_by <> OLD.closed_by OR NEW.last_entry_id <> OLD.last_entry_id OR NEW.carried_tasks <> OLD.carried_tasks THEN
    RAISE EXCEPTION 'a month''s close is kept as written; it can only be reopened, once' USING ERRCODE = 'raise_exception';
  END IF;
  RETURN NEW;
END $function$;

COMMENT ON FUNCTION public.spendgate_month_close_reopen_only() IS 'A close is never deleted or changed; it can only be reopened, once.';
