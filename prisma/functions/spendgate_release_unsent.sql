-- spendgate_release_unsent: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_release_unsent(p_refs uuid[], p_reason text)
 RETURNS TABLE(submission_ref uuid, task_id bigint)
 LANGUAGE plpgsql
AS $function$
DECLARE
  t record;
BEGIN
  FOR t IN SELECT x.submission_ref AS ref, x.id FROM task x
           WHERE x.settled_at IS NULL AND x.next_poll_at IS NOT NULL -- the open tasks (task_open)
             AND x.status = 'submitting' AND x.submission_ref = ANY (p_refs) ORDER BY x.id LOOP
    IF spendgate_release_rejected(t.id, p_reason) THEN
      submission_ref := t.ref;
      task_id := t.id;
      RETURN NEXT;
    END IF;
  END LOOP;
END $function$;

COMMENT ON FUNCTION public.spendgate_release_unsent(p_refs uuid[], p_reason text) IS 'Holds the gateway placed but could not confirm (the database failed while the hold committed: a failover, a restart) and so never sent to the vendor (decisions §17): each task still submitting with one of these references is released whole and rejected, as spendgate_release_rejected does, and its Idempotency-Key freed. Answers the tasks released; a reference whose hold was never recorded answers nothing. Looks only among open tasks (the partial index task_open; a rare path, after a failure).';
