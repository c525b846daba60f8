-- spendgate_month_partitions: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_month_partitions(p_month date)
 RETURNS TABLE(table_name text, partition_name text, bound text, task_ids int8range)
 LANGUAGE sql
 STABLE
AS $function$
  SELECT p.relname::text, c.relname::text, pg_get_expr(c.relpartbound, c.oid),
         CASE WHEN p.relname IN ('task', 'charge_line') THEN
           int8range((substring(pg_get_expr(c.relpartbound, c.oid) FROM 'FROM \(''?(-?\d+)''?\)'))::bigint,
                     (substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO \(''?(-?\d+)''?\)'))::bigint)
         END
  FROM pg_inherits i
  JOIN pg_class c ON c.oid = i.inhrelid
  JOIN pg_class p ON p.oid = i.inhparent
  WHERE p.relname IN ('task', 'charge_line', 'ledger_entry')
    AND c.relname ~ ('^' || p.relname || to_char(p_month, '"_y"YYYY"m"MM') || '(_before)?$')
  ORDER BY CASE p.relname WHEN 'charge_line' THEN 0 WHEN 'task' THEN 1 ELSE 2 END, c.relname
$function$;

COMMENT ON FUNCTION public.spendgate_month_partitions(p_month date) IS 'A month''s partitions of the tables an archive takes (task, charge_line, ledger_entry; the hourly roll-up stays), with their bounds and, for task and charge_line, the ids they cover (a month of ids given before the partitions starts at MINVALUE: its range has no lower end).';
