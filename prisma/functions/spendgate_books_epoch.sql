-- spendgate_books_epoch: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_books_epoch()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  UPDATE books_epoch SET version = version + 1;
  RETURN NULL;
END $function$;

COMMENT ON FUNCTION public.spendgate_books_epoch() IS 'Cached reports (decisions §22): a project or key renamed, a commitment changed or a credit price published alters reports of many months (their names, FOCUS''s commitment columns, FOCUS''s credit costs), so these statements advance the one epoch every cached answer is also stamped with. Rare writes: one row suffices.';
