-- spendgate_task_post_at: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261125170100_month_close_functions (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_task_post_at(t task)
 RETURNS timestamp with time zone
 LANGUAGE sql
AS $function$
  SELECT spendgate_post_at(coalesce((SELECT max(e.effective_at) FROM ledger_entry e WHERE e.task_id = t.id AND e.kind = 'hold'), t.accepted_at))
$function$;

COMMENT ON FUNCTION public.spendgate_task_post_at(t task) IS 'Where a task''s open hold lives: its acceptance, or the start of the month a close carried it into (the latest hold entry). Its release and charge are posted there, or later if closed.';
