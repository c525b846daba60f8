-- spendgate_kept_as_written: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261125170100_month_close_functions (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_kept_as_written()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  RAISE EXCEPTION '% rows are kept as written: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'raise_exception';
END $function$;

COMMENT ON FUNCTION public.spendgate_kept_as_written() IS 'Closing a month (decisions §13). Every function that writes a ledger entry for a task or an adjustment first takes month_close in ROW SHARE mode, then posts where the books are open: `spendgate_post_at`. A close takes the table in EXCLUSIVE mode, so it waits for every such movement in flight and every later one waits for it, then sees it: a movement lands before the close (in the month) or after it (a prior-period item), never both, never lost.';
