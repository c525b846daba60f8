-- spendgate_month_partition: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_month_partition(p_table text, p_month date)
 RETURNS text
 LANGUAGE plpgsql
AS $function$
DECLARE
  name text := p_table || to_char(p_month, '"_y"YYYY"m"MM');
  key text := CASE p_table WHEN 'task' THEN 'id' WHEN 'charge_line' THEN 'task_id' WHEN 'ledger_entry' THEN 'effective_at' WHEN 'spend_hourly' THEN 'hour' END;
  lo text;
  hi text;
  waiting boolean;
BEGIN
  IF key IS NULL THEN RAISE EXCEPTION '% is not a table partitioned by month', p_table; END IF;
  IF to_regclass(name) IS NOT NULL THEN RETURN NULL; END IF;
  IF p_table IN ('task', 'charge_line') THEN
    lo := (spendgate_month_index(p_month::timestamp AT TIME ZONE 'UTC')::bigint << 40)::text;
    hi := ((spendgate_month_index(p_month::timestamp AT TIME ZONE 'UTC') + 1)::bigint << 40)::text;
  ELSE
    lo := quote_literal(p_month::timestamp AT TIME ZONE 'UTC');
    hi := quote_literal((p_month + interval '1 month')::timestamp AT TIME ZONE 'UTC');
  END IF;
  EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE %I >= %s AND %I < %s)', p_table || '_default', key, lo, key, hi) INTO waiting;
  IF waiting THEN
    -- Rows of the month were written before its partition existed: they move into it.
    PERFORM spendgate_add_partition(p_table, name, format('FOR VALUES FROM (%s) TO (%s)', lo, hi));
  ELSE
    -- Made apart, then attached: attaching locks the table in SHARE UPDATE EXCLUSIVE mode (writes go
    -- on), and only the default, which it scans, in ACCESS EXCLUSIVE.
    EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', name, p_table);
    EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)', p_table, name, lo, hi);
    PERFORM spendgate_partition_extras(p_table, name);
  END IF;
  RETURN name;
END $function$;

COMMENT ON FUNCTION public.spendgate_month_partition(p_table text, p_month date) IS 'Makes one month''s partition of task, charge_line, ledger_entry or spend_hourly (named <table>_yYYYYmMM; NULL when it exists), moving any rows its default partition took for that month (spendgate_add_partition). Called by spendgate_make_partitions and before an archive.';
