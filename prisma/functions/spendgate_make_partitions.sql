-- spendgate_make_partitions: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_make_partitions(p_ahead integer)
 RETURNS SETOF text
 LANGUAGE plpgsql
AS $function$
DECLARE
  m date;
  tbl text;
  made text;
BEGIN
  -- One maker at a time (instances and migrate); the others find the work done.
  PERFORM pg_advisory_xact_lock(hashtext('spendgate_make_partitions'));
  FOR m IN SELECT (date_trunc('month', now() AT TIME ZONE 'UTC') + make_interval(months => g))::date FROM generate_series(0, greatest(p_ahead, 0)) g LOOP
    CONTINUE WHEN EXISTS (SELECT 1 FROM archived_month a WHERE a.month = m);
    FOREACH tbl IN ARRAY ARRAY['task', 'charge_line', 'ledger_entry', 'spend_hourly'] LOOP
      made := spendgate_month_partition(tbl, m);
      IF made IS NOT NULL THEN RETURN NEXT made; END IF;
    END LOOP;
  END LOOP;
END $function$;

COMMENT ON FUNCTION public.spendgate_make_partitions(p_ahead integer) IS 'The month now and the next p_ahead months, for every table partitioned by month (decisions §18): the partitions missing are made. Run by migrate and, at start and every hour, by the instance that gets its lock (PARTITIONS_AHEAD). A write with no partition of its month lands in the table''s default partition meanwhile; the month''s partition takes those rows when it is made.';
