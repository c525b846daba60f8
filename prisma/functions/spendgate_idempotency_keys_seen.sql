-- spendgate_idempotency_keys_seen: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261122150000_hold_idempotency_fast_path (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_idempotency_keys_seen(p_requests spendgate_hold_request[])
 RETURNS boolean
 LANGUAGE sql
 STABLE
 SET enable_seqscan TO 'off'
 SET enable_bitmapscan TO 'off'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
  SELECT EXISTS (SELECT 1 FROM unnest(p_requests) x
                 JOIN task_idempotency k ON k.project_id = x.project_id AND k.idempotency_key = x.idempotency_key)
$function$;

COMMENT ON FUNCTION public.spendgate_idempotency_keys_seen(p_requests spendgate_hold_request[]) IS 'Whether any request of the batch carries a key its project has used before: one probe of the (project_id, idempotency_key) index per request. The plan is pinned for the reason given for spendgate_record_accepted in 20261122120000_ledger_hot_path: before statistics exist, or while they say the task table is small, the planner hash-joins a sequential scan of every task into the batch (seen with auto_explain: 3,200 tasks read for a batch of 64 on a fresh database). With statistics it is an index-only probe of task_project_idempotency_key: 0.13 ms for 64 keys. Before the first ANALYZE of task (autovacuum''s, within a minute of the first submissions) it may still probe the project''s accepted_at index and filter by key, as the in-order path''s own key lookup may: both index paths look alike to the planner without statistics.';
