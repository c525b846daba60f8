-- spendgate_first_poll_at: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_first_poll_at(p_at timestamp with time zone)
 RETURNS timestamp with time zone
 LANGUAGE sql
 STABLE
AS $function$
  SELECT p_at + interval '1 second'
$function$;

COMMENT ON FUNCTION public.spendgate_first_poll_at(p_at timestamp with time zone) IS 'When a task accepted at p_at is first polled: a second later. The hold functions write it as the task''s next_poll_at, the records keep it (their UPDATE then touches no index: 20261127210000_lean_task), and the sweep of abandoned submissions relies on it to find tasks still submitting through task_open (src/tasks/task-store.ts): one rule in one place. A one-expression SQL function, inlined into each statement; STABLE as its body is (adding an interval to a timestamptz depends on the time zone), since PostgreSQL inlines no function declared less volatile than its body.';
