-- spendgate_resolve: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261127120000_resolution_sets_the_net (of 5).
CREATE OR REPLACE FUNCTION public.spendgate_resolve(p_task bigint, p_outcome text, p_amount numeric, p_reason text)
 RETURNS numeric
 LANGUAGE plpgsql
AS $function$
DECLARE
  t task;
  target numeric;
  delta numeric;
  post timestamptz;
  belongs date;
  net numeric;
BEGIN
  IF p_reason IS NULL OR length(trim(p_reason)) = 0 THEN
    RAISE EXCEPTION 'a resolution needs a reason' USING ERRCODE = 'check_violation';
  END IF;
  LOCK TABLE month_close IN ROW SHARE MODE;
  SELECT * INTO t FROM task WHERE id = p_task FOR UPDATE;
  IF NOT FOUND THEN RAISE EXCEPTION 'task % not found', p_task USING ERRCODE = 'no_data_found'; END IF;
  IF t.resolved_at IS NOT NULL THEN
    RAISE EXCEPTION 'task % was already resolved (%)', p_task, t.resolution USING ERRCODE = 'unique_violation';
  END IF;
  IF NOT t.needs_review THEN
    RAISE EXCEPTION 'task % is not under review', p_task USING ERRCODE = 'check_violation';
  END IF;
  -- A settled task's net: its charge and every adjustment of it (accepted vendor figures, corrections).
  net := coalesce(t.charge_amount, 0) + coalesce((SELECT sum(e.amount) FROM ledger_entry e WHERE e.task_id = t.id AND e.kind = 'adjustment'), 0);
  -- CHARGE without an amount: what the task stands at. Settled, its net (an overrun is the vendor's
  -- usage: accepting it changes nothing); not settled, its hold. A stated amount is what the task
  -- costs all told: a settled task's net becomes it (decisions §10, §16).
  target := CASE p_outcome WHEN 'CHARGE' THEN coalesce(p_amount, CASE WHEN t.settled_at IS NOT NULL THEN net ELSE t.hold_amount END) ELSE 0 END;
  IF target < 0 THEN RAISE EXCEPTION 'a charge cannot be negative' USING ERRCODE = 'check_violation'; END IF;
  PERFORM spendgate_lock_project(t.project_id);

  IF t.settled_at IS NULL THEN
    post := spendgate_task_post_at(t);
    belongs := spendgate_closed_month(t.accepted_at);
    IF t.hold_amount > 0 THEN
      INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at, reason, belongs_to)
      VALUES (t.project_id, t.id, 'release', t.unit, t.hold_amount, post, 'resolved: ' || p_reason, belongs);
    END IF;
    IF target <> 0 OR t.hold_amount = 0 THEN -- a charge of 0 without a hold: see spendgate_settle
      INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at, reason, belongs_to)
      VALUES (t.project_id, t.id, 'charge', t.unit, target, post, 'resolved: ' || p_reason, belongs);
    END IF;
    PERFORM spendgate_apply_to_budgets(t.project_id, t.unit, true, t.api_key_id, t.end_user, t.tags, t.model, t.family, t.kind, post, t.hold_amount, target);
    PERFORM spendgate_rollup_add(t, 'resolved', t.exactness, target, '{}'::jsonb, post);
    PERFORM spendgate_release_limits(p_task, CASE WHEN target = 0 THEN 0 END); -- released: nothing ran; charged: its estimate stands
    -- A task still in flight at the vendor (flagged for its age) stops being polled; its outcome
    -- is what the operator decided: unknown to the vendor's side of the books.
    UPDATE task SET settled_at = clock_timestamp(), updated_at = clock_timestamp(), charge_amount = target,
                    charge_exactness = t.exactness, next_poll_at = NULL,
                    status = CASE WHEN t.status IN ('submitting', 'processing') THEN 'unknown'::"TaskStatus" ELSE t.status END
    WHERE id = p_task;
    delta := target;
  ELSE
    delta := target - net;
    IF delta <> 0 THEN
      PERFORM spendgate_adjust(t.project_id, t.unit, delta, 'resolved ' || lower(p_outcome) || ': ' || p_reason, t.id, t.accepted_at);
    END IF;
  END IF;

  UPDATE task SET needs_review = false, resolution = p_outcome, resolution_reason = p_reason,
                  resolved_at = clock_timestamp(), updated_at = clock_timestamp()
  WHERE id = p_task;
  RETURN delta;
END $function$;

COMMENT ON FUNCTION public.spendgate_resolve(p_task bigint, p_outcome text, p_amount numeric, p_reason text) IS 'A resolution''s stated amount is what a settled task costs all told: its net (charge and every adjustment of it) becomes the amount. Before, the adjustment was counted from the charge alone, so a task whose vendor figure was taken (or corrected) before it was resolved ended at the amount plus those adjustments (found by the money model''s tester, decisions §16).';
