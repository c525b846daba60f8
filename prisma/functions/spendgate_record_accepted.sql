-- spendgate_record_accepted: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261123190300_hardening_ledger (of 2).
CREATE OR REPLACE FUNCTION public.spendgate_record_accepted(p_task_ids bigint[], p_upstream_ids text[], p_upstream_task_ids bigint[], p_response_bodies text[])
 RETURNS SETOF bigint
 LANGUAGE sql
 SET enable_seqscan TO 'off'
 SET enable_bitmapscan TO 'off'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  WITH u AS (
  UPDATE task t SET status = 'processing', upstream_id = a.upstream_id, upstream_task_id = a.upstream_task_id,
         response_body = a.response_body, response_status = NULL, submitted_at = clock_timestamp(), updated_at = clock_timestamp(),
         -- Held with its first poll's time, a task keeps it: the row is rewritten on its page, no index
         -- touched (spendgate_partition_extras). One marked unknown meanwhile has none.
         next_poll_at = coalesce(t.next_poll_at, spendgate_first_poll_at(clock_timestamp())),
         needs_review = CASE WHEN t.status = 'unknown' THEN false ELSE t.needs_review END,
         review_reason = CASE WHEN t.status = 'unknown' THEN NULL ELSE t.review_reason END
  FROM unnest(p_task_ids, p_upstream_ids, p_upstream_task_ids, p_response_bodies)
       AS a(task_id, upstream_id, upstream_task_id, response_body)
  WHERE t.id = a.task_id AND t.status IN ('submitting', 'unknown') AND t.settled_at IS NULL
  RETURNING t.id, t.upstream_task_id, t.project_id
  ),
  -- The vendor's id, unique across every month (decisions §18).
  k AS (INSERT INTO task_upstream (upstream_task_id, task_id, project_id) SELECT u.upstream_task_id, u.id, u.project_id FROM u WHERE u.upstream_task_id IS NOT NULL)
  SELECT u.id FROM u
$function$;

COMMENT ON FUNCTION public.spendgate_record_accepted(p_task_ids bigint[], p_upstream_ids text[], p_upstream_task_ids bigint[], p_response_bodies text[]) IS 'Recording acceptance (see 20261122120000_ledger_hot_path), never for a task an operator has already resolved (settled_at set) while its answer was lost.';
