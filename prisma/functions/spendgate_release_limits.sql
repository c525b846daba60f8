-- spendgate_release_limits: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_release_limits(p_task bigint, p_tokens bigint)
 RETURNS void
 LANGUAGE sql
AS $function$
  WITH gone AS (
    DELETE FROM limit_hold h WHERE h.task_id = p_task RETURNING h.limit_id, h.subject, h.window_start, h.tokens
  )
  UPDATE limit_use u
  SET used = greatest(0, u.used - CASE WHEN g.window_start = timestamptz 'epoch' THEN 1 ELSE g.tokens - coalesce(p_tokens, g.tokens) END)
  FROM gone g
  WHERE u.limit_id = g.limit_id AND u.subject = g.subject AND u.window_start = g.window_start
$function$;

COMMENT ON FUNCTION public.spendgate_release_limits(p_task bigint, p_tokens bigint) IS 'Limits (decisions §20): a task that ends (settled, failed, refused by the vendor, never sent, or released by review) stops counting in flight (its limits'' counts lowered by one), and a tokens-per-minute limit''s minute is corrected from the estimate to p_tokens (what the settlement counted; 0 when nothing ran; NULL keeps the estimate) while that minute is still the limit''s current one. Called by every function that ends a task, in its transaction.';
