-- spendgate_record_one: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261126100000_hold_and_record_of_one (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_record_one(p_task bigint, p_upstream_id text, p_upstream_task_id bigint, p_response_body text)
 RETURNS SETOF bigint
 LANGUAGE sql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  WITH u AS (
  UPDATE task t SET status = 'processing', upstream_id = p_upstream_id, upstream_task_id = p_upstream_task_id,
         response_body = p_response_body, response_status = NULL, submitted_at = clock_timestamp(), updated_at = clock_timestamp(),
         -- Held with its first poll's time, a task keeps it: the row is rewritten on its page, no index
         -- touched (spendgate_partition_extras). One marked unknown meanwhile has none.
         next_poll_at = coalesce(t.next_poll_at, spendgate_first_poll_at(clock_timestamp())),
         needs_review = CASE WHEN t.status = 'unknown' THEN false ELSE t.needs_review END,
         review_reason = CASE WHEN t.status = 'unknown' THEN NULL ELSE t.review_reason END
  WHERE t.id = p_task AND t.status IN ('submitting', 'unknown') AND t.settled_at IS NULL
  RETURNING t.id, t.upstream_task_id, t.project_id
  ),
  -- The vendor's id, unique across every month (decisions §18).
  k AS (INSERT INTO task_upstream (upstream_task_id, task_id, project_id) SELECT u.upstream_task_id, u.id, u.project_id FROM u WHERE u.upstream_task_id IS NOT NULL)
  SELECT u.id FROM u
$function$;

COMMENT ON FUNCTION public.spendgate_record_one(p_task bigint, p_upstream_id text, p_upstream_task_id bigint, p_response_body text) IS 'One acceptance: spendgate_record_accepted''s UPDATE for a single task, a probe of the primary key. Its plan is generic (pruned to the task''s partition when it runs): with task partitioned, the plan cache chose a custom plan on every call, planning the UPDATE against every partition each time: 544–576 µs of backend CPU a call against 386–423 generic (bench:statement-cpu, 2026-11-27, alternated).';
