-- spendgate_ledger_partition_once: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_ledger_partition_once(p_partition text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
  EXECUTE format($f$CREATE UNIQUE INDEX IF NOT EXISTS %I ON %I USING btree (task_id, kind, date_trunc('month'::text, (effective_at AT TIME ZONE 'UTC'::text)))
                    WHERE ((task_id IS NOT NULL) AND (kind = ANY (ARRAY['hold'::"LedgerKind", 'release'::"LedgerKind", 'charge'::"LedgerKind"])))$f$,
                 p_partition || '_once', p_partition);
END $function$;

COMMENT ON FUNCTION public.spendgate_ledger_partition_once(p_partition text) IS 'A task''s hold, release and charge are each written once a month (settlement''s exactly-once, decisions §3). A unique index of the partitioned ledger_entry would have to hold effective_at itself, so each partition carries this one.';
