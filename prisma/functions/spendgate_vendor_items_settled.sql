-- spendgate_vendor_items_settled: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261127100000_vendor_items_against_the_net (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_vendor_items_settled(p_task bigint, p_who text, p_reason text)
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_net numeric;
  v_unit "Unit";
  v_settled boolean;
  v_closed integer;
BEGIN
  SELECT coalesce(t.charge_amount, 0) + coalesce((SELECT sum(e.amount) FROM ledger_entry e WHERE e.task_id = t.id AND e.kind = 'adjustment'), 0),
         t.unit, t.settled_at IS NOT NULL
    INTO v_net, v_unit, v_settled
    FROM task t WHERE t.id = p_task;
  IF NOT FOUND OR NOT v_settled THEN RETURN 0; END IF;
  -- What the vendor says the task costs: the item's figure (ours_not_billed: nothing).
  UPDATE vendor_recon_item i SET state = 'accepted', resolved_by = p_who, resolved_at = clock_timestamp(),
         note = 'closed by a resolution: the task''s net equals the vendor''s figure (' || p_reason || ')'
   WHERE i.task_id = p_task AND i.state = 'open' AND i.unit = v_unit
     AND i.class IN ('amount_differs', 'billed_again', 'pending', 'ours_not_billed')
     AND CASE WHEN i.class = 'ours_not_billed' THEN 0 ELSE i.theirs END = v_net;
  GET DIAGNOSTICS v_closed = ROW_COUNT;
  -- A difference still open keeps the task in the review queue, whatever the resolution cleared.
  UPDATE task t SET needs_review = true, updated_at = clock_timestamp(),
         review_reason = 'the vendor''s statement differs from our figure (vendor reconciliation)'
   WHERE t.id = p_task AND NOT t.needs_review
     AND EXISTS (SELECT 1 FROM vendor_recon_item i WHERE i.task_id = p_task AND i.state = 'open' AND i.class IN ('amount_differs', 'billed_again', 'pending'));
  RETURN v_closed;
END $function$;

COMMENT ON FUNCTION public.spendgate_vendor_items_settled(p_task bigint, p_who text, p_reason text) IS 'Vendor differences are decided against the task''s net as it stands, not as it was at import (decisions §14): * a task an earlier statement already billed is its own class, billed_again (double billing across statements, or a corrected re-send), a review item; * after a resolution, spendgate_vendor_items_settled closes the open items whose figure the task''s net now equals, and keeps the task under review while an open item still differs.';
