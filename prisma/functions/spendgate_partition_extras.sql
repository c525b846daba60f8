-- spendgate_partition_extras: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_partition_extras(p_table text, p_name text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF p_table = 'ledger_entry' THEN PERFORM spendgate_ledger_partition_once(p_name); END IF;
  IF p_table = 'task' THEN EXECUTE format('ALTER TABLE %I SET (fillfactor = 80)', p_name); END IF;
END $function$;

COMMENT ON FUNCTION public.spendgate_partition_extras(p_table text, p_name text) IS 'What a new partition of a monthly table needs beyond what it takes from its parent (a partitioned table holds no storage settings, and its unique indexes must hold the partition key): ledger_entry''s once-a-month index (spendgate_ledger_partition_once), and task''s fillfactor of 80, room on each page for its row''s next version. The record of the vendor''s acceptance then rewrites the row on its own page without touching an index (a HOT update: no indexed column and no column of a partial index''s predicate changes; 20261127210000_lean_task).';
