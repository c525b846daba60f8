-- spendgate_add_partition: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_add_partition(p_table text, p_name text, p_bound text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF p_table NOT IN ('task', 'charge_line', 'ledger_entry', 'spend_hourly') OR p_bound !~ '^FOR VALUES FROM \(.*\) TO \(.*\)$' THEN
    RAISE EXCEPTION 'not a monthly partition: % %', p_table, p_bound;
  END IF;
  -- Rows of its range that the default took meanwhile move in: the default steps aside, the
  -- partition and a new default are made, and the rows go back through the table to where they
  -- belong. The triggers that check or announce a write let this move pass (spendgate.moving_rows).
  PERFORM set_config('spendgate.moving_rows', 'on', true);
  EXECUTE format('ALTER TABLE %I DETACH PARTITION %I', p_table, p_table || '_default');
  EXECUTE format('ALTER TABLE %I RENAME TO %I', p_table || '_default', p_table || '_default_moving');
  EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT', p_table || '_default', p_table);
  EXECUTE format('CREATE TABLE %I PARTITION OF %I %s', p_name, p_table, p_bound);
  EXECUTE format('INSERT INTO %I SELECT * FROM %I', p_table, p_table || '_default_moving');
  EXECUTE format('DROP TABLE %I', p_table || '_default_moving');
  PERFORM spendgate_partition_extras(p_table, p_name);
  PERFORM spendgate_partition_extras(p_table, p_table || '_default');
  PERFORM set_config('spendgate.moving_rows', '', true);
END $function$;

COMMENT ON FUNCTION public.spendgate_add_partition(p_table text, p_name text, p_bound text) IS 'A partition of a monthly table made with its bound, taking the rows of its range that waited in the default partition: a month whose partition did not exist when it was written (spendgate_month_partition), or an archived month made again with the bound in its manifest (`spendgate archive restore`, which then writes the archived rows into it). Named spendgate_restore_partition before 20261127190000.';
