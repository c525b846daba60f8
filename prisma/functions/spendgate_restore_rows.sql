-- spendgate_restore_rows: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_restore_rows(p_table text, p_rows jsonb)
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
DECLARE
  cols text;
  casts text;
  written integer;
BEGIN
  IF p_table NOT IN ('task', 'charge_line', 'ledger_entry') THEN
    RAISE EXCEPTION '% is not a table an archive holds', p_table;
  END IF;
  SELECT string_agg(format('%I', a.attname), ', ' ORDER BY a.attnum),
         string_agg(format('(r.v->>%s)::%s', a.n - 1, format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY a.attnum)
  INTO cols, casts
  FROM (SELECT x.*, row_number() OVER (ORDER BY x.attnum) AS n FROM pg_attribute x
        WHERE x.attrelid = p_table::regclass AND x.attnum > 0 AND NOT x.attisdropped) a;
  EXECUTE format('INSERT INTO %I (%s) SELECT %s FROM jsonb_array_elements($1) AS r(v) ON CONFLICT DO NOTHING', p_table, cols, casts)
  USING p_rows;
  GET DIAGNOSTICS written = ROW_COUNT;
  RETURN written;
END $function$;

COMMENT ON FUNCTION public.spendgate_restore_rows(p_table text, p_rows jsonb) IS 'Rows of an archive written back (`spendgate archive restore`, decisions §18): each a JSON array of the text of every column in the table''s order, cast to its type; a row already there (a task kept in the database since the archive, settled since) is left as it is. Answers how many were written.';
