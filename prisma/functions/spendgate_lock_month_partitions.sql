-- spendgate_lock_month_partitions: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_lock_month_partitions(p_month date)
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
DECLARE
  part record;
  n integer := 0;
BEGIN
  FOR part IN SELECT * FROM spendgate_month_partitions(p_month) LOOP
    EXECUTE format('LOCK TABLE %I IN SHARE MODE', part.partition_name);
    n := n + 1;
  END LOOP;
  RETURN n;
END $function$;

COMMENT ON FUNCTION public.spendgate_lock_month_partitions(p_month date) IS 'While a month is archived, nothing in its partitions changes (SHARE: reads go on; a settlement of one of its tasks waits until the archive commits, then finds the task in the default partition).';
