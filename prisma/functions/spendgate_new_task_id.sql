-- spendgate_new_task_id: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_new_task_id(p_at timestamp with time zone)
 RETURNS bigint
 LANGUAGE sql
RETURN (((spendgate_month_index(p_at))::bigint << 40) + nextval('task_id_seq'::regclass));

COMMENT ON FUNCTION public.spendgate_new_task_id(p_at timestamp with time zone) IS 'A new task''s id: its month of acceptance (spendgate_month_index) in the bits above 40, the sequence below. task and charge_line are partitioned by these ranges, so a look-up by id reads one month''s partition. Every writer of a task passes its acceptance time; the column default passes the transaction''s, as accepted_at''s default does. Ids given before the partitions (below 2^40) keep their own ranges (the migration 20261127180000_monthly_partitions).';
