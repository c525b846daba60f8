-- spendgate_books_changed: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_books_changed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  INSERT INTO books_change AS c (month, project_id, version)
  VALUES (date_trunc('month', NEW.day)::date, NEW.project_id, 1)
  ON CONFLICT (month, project_id) DO UPDATE SET version = c.version + 1;
  RETURN NULL;
END $function$;

COMMENT ON FUNCTION public.spendgate_books_changed() IS 'Cached reports (decisions §22): every write to spend_rollup advances its month''s and project''s counter in books_change, in the writer''s transaction, so the counter becomes visible exactly when the figures do. Settlements of one project already queue on its hourly roll-up row; this row is of the same width.';
