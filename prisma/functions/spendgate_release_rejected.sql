-- spendgate_release_rejected: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261125170100_month_close_functions (of 4).
CREATE OR REPLACE FUNCTION public.spendgate_release_rejected(p_task bigint, p_reason text)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
DECLARE
  t task;
  post timestamptz;
BEGIN
  LOCK TABLE month_close IN ROW SHARE MODE;
  SELECT * INTO t FROM task WHERE id = p_task FOR UPDATE;
  IF NOT FOUND OR t.status NOT IN ('submitting', 'unknown') OR t.settled_at IS NOT NULL THEN
    RETURN false;
  END IF;
  PERFORM spendgate_lock_project(t.project_id);
  post := spendgate_task_post_at(t);
  UPDATE task SET status = 'rejected', settled_at = clock_timestamp(), updated_at = clock_timestamp(),
                  charge_amount = 0, review_reason = p_reason, needs_review = false, idempotency_key = NULL
  WHERE id = p_task;
  DELETE FROM task_idempotency WHERE project_id = t.project_id AND idempotency_key = t.idempotency_key AND task_id = t.id;
  IF t.hold_amount > 0 THEN
    INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at, reason, belongs_to)
    VALUES (t.project_id, t.id, 'release', t.unit, t.hold_amount, post, p_reason, spendgate_closed_month(t.accepted_at));
  END IF;
  PERFORM spendgate_apply_to_budgets(t.project_id, t.unit, true, t.api_key_id, t.end_user, t.tags, t.model, t.family, t.kind, post, t.hold_amount, 0);
  PERFORM spendgate_release_limits(p_task, 0); -- nothing ran (decisions §20)
  RETURN true;
END $function$;

COMMENT ON FUNCTION public.spendgate_release_rejected(p_task bigint, p_reason text) IS 'The vendor refused a task with a definite answer (or was never reached): its hold is released whole (a release entry, decisions §4), the task is rejected and its Idempotency-Key freed for a retry. Once per task (false when it is no longer submitting or unknown). Like every posting it takes month_close in ROW SHARE mode and posts where the books are open (spendgate_task_post_at, decisions §13). Named spendgate_reject before 20261127140000.';
