-- spendgate_claim_polls: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261127000000_poll_slots_from_the_answer (of 2).
CREATE OR REPLACE FUNCTION public.spendgate_claim_polls(p_instance text, p_limit integer, p_per_second integer, p_lease_seconds integer)
 RETURNS TABLE(id text, model text, unit "Unit", price_basis jsonb, price_book_version integer, failure_policy "FailurePolicy", upstream_task_id text, poll_attempts integer, kind text, accepted_at timestamp with time zone, slot_ms integer)
 LANGUAGE plpgsql
AS $function$
#variable_conflict use_column
DECLARE
  now_at timestamptz := clock_timestamp();
  pace_at timestamptz;
  start_at timestamptz;
  live integer;
  n integer;
  spacing double precision := 1.02 / p_per_second; -- seconds between two slots
BEGIN
  INSERT INTO poller_instance AS pi (id, seen_at) VALUES (p_instance, now_at)
  ON CONFLICT (id) DO UPDATE SET seen_at = EXCLUDED.seen_at;
  SELECT pp.next_at INTO pace_at FROM poll_pace pp WHERE pp.id = 1 FOR UPDATE;
  -- Read again once the pace's lock is held: waiting for another instance's claim is not time ahead.
  now_at := clock_timestamp();
  start_at := greatest(pace_at, now_at);
  SELECT count(*) INTO live FROM poller_instance pi WHERE pi.seen_at > now_at - interval '10 seconds';
  n := least(p_limit, ceil(p_per_second::numeric / greatest(live, 1))::integer,
             floor(extract(epoch FROM (now_at + interval '1 second') - start_at) / spacing)::integer);
  IF n <= 0 THEN RETURN; END IF;
  RETURN QUERY
  WITH c AS (
    UPDATE task t SET next_poll_at = now_at + make_interval(secs => p_lease_seconds), poll_attempts = t.poll_attempts + 1
    WHERE t.id IN (SELECT d.id FROM task d WHERE d.settled_at IS NULL AND d.next_poll_at <= now_at AND d.status = 'processing'
                   ORDER BY d.accepted_at DESC LIMIT n FOR UPDATE SKIP LOCKED)
    RETURNING t.id, t.model, t.unit, t.price_basis, t.price_book_version, t.project_id, t.upstream_task_id, t.poll_attempts, t.kind, t.accepted_at
  )
  SELECT c.id::text, c.model, c.unit, c.price_basis, c.price_book_version,
         (SELECT p.failure_policy FROM project p WHERE p.id = c.project_id), c.upstream_task_id::text, c.poll_attempts, c.kind, c.accepted_at,
         -- From when the answer is written (every task is claimed by then: the window reads them all),
         -- not from the start: negative when the slot has passed meanwhile.
         (extract(epoch FROM start_at - clock_timestamp()) * 1000 + (row_number() OVER (ORDER BY c.accepted_at DESC) - 1) * 1000 * spacing)::integer
  FROM c;
  GET DIAGNOSTICS n = ROW_COUNT;
  UPDATE poll_pace pp SET next_at = start_at + make_interval(secs => n * spacing) WHERE pp.id = 1;
END $function$;

COMMENT ON FUNCTION public.spendgate_claim_polls(p_instance text, p_limit integer, p_per_second integer, p_lease_seconds integer) IS 'The poller''s claim measured each poll''s slot from when the function began. A claim that waited for the pace''s lock (another instance claiming) or took long to pick its tasks (20,000 due, a loaded machine: tens of ms) answered slots that the gateway then timed from the answer''s arrival, each that much late, and the lateness check (LATE_MS in poller.service.ts) never saw it. Two instances late by different amounts put their runs of slots closer together: the vendor saw 43 polls in one second against a cap of 40 (test/tasks/ghost-tasks.test.ts in a fresh-clone CI run, 2026-11-27). Now "now" is read once the pace''s lock is held, and slots are measured from when the answer is written; what is left unmeasured is the commit and the way back.';
