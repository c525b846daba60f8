-- spendgate_archive_page: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_archive_page(p_partition text, p_after text[], p_limit integer)
 RETURNS SETOF text[]
 LANGUAGE plpgsql
 STABLE
AS $function$
DECLARE
  parent text;
  cols text;
  key text[];
  types text[];
  keys text;
  after text;
BEGIN
  SELECT p.relname INTO parent FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
  WHERE c.relname = p_partition AND c.relnamespace = 'public'::regnamespace;
  IF parent IS NULL OR parent NOT IN ('task', 'charge_line', 'ledger_entry') THEN
    RAISE EXCEPTION '% is not a partition of task, charge_line or ledger_entry', p_partition;
  END IF;
  key := CASE parent WHEN 'charge_line' THEN ARRAY['task_id', 'stage', 'seq'] ELSE ARRAY['id'] END;
  types := CASE parent WHEN 'charge_line' THEN ARRAY['bigint', 'text', 'integer'] ELSE ARRAY['bigint'] END;
  SELECT string_agg(format('%I::text', a.attname), ', ' ORDER BY a.attnum) INTO cols
  FROM pg_attribute a WHERE a.attrelid = p_partition::regclass AND a.attnum > 0 AND NOT a.attisdropped;
  SELECT string_agg(format('%I', k), ', ') INTO keys FROM unnest(key) k;
  IF p_after IS NOT NULL THEN
    SELECT format('WHERE (%s) > (%s)', keys, string_agg(format('%L::%s', v, t), ', ' ORDER BY n)) INTO after
    FROM unnest(p_after, types) WITH ORDINALITY AS x(v, t, n);
  END IF;
  RETURN QUERY EXECUTE format('SELECT ARRAY[%s] FROM %I %s ORDER BY %s LIMIT %s', cols, p_partition, coalesce(after, ''), keys, p_limit);
END $function$;

COMMENT ON FUNCTION public.spendgate_archive_page(p_partition text, p_after text[], p_limit integer) IS 'One page of an archived month''s partition for `spendgate archive` (decisions §18): each row as the text of every column in the table''s order (exact, restorable with spendgate_restore_rows), in key order after the key p_after (NULL: from the start).';
