-- Hand-written, two hot-path functions.
--
-- Recording acceptance: the upstream accepted a batch of held tasks; each becomes `processing` with the
-- vendor's ids and answer, once: only a `submitting` or `unknown` task is taken, and this is the
-- only writer of upstream_task_id, which leaves that status (the unique key on it backs this up).
--
-- Why a function with planner settings: the plain UPDATE (then also filtering on
-- `upstream_task_id IS NULL`) was planned from the table's statistics, and before the first
-- (auto-)ANALYZE of a fresh database, or while the statistics say few tasks lack an upstream id,
-- the planner read every `upstream_task_id IS NULL` entry of task_upstream_task_id_key (each
-- accepted task leaves one behind until VACUUM) and joined the batch against all of them.
-- Measured on a fresh database at 64 concurrent records: 0.146 ms of PostgreSQL CPU per record and
-- 6,300 records/s, against 0.026 ms and 23,600-27,900/s with the primary-key probe per batch row. The batch is at most a few hundred rows and each is one
-- primary-key lookup, so that plan is right at every table size: the settings below make it the
-- only one, whatever the statistics say.
CREATE FUNCTION spendgate_record_accepted(p_task_ids bigint[], p_upstream_ids text[], p_upstream_task_ids bigint[],
                                          p_response_bodies text[])
RETURNS SETOF bigint LANGUAGE sql
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off
AS $$
  UPDATE task t SET status = 'processing', upstream_id = a.upstream_id, upstream_task_id = a.upstream_task_id,
         response_body = a.response_body, submitted_at = clock_timestamp(), updated_at = clock_timestamp(),
         next_poll_at = clock_timestamp() + interval '1 second',
         needs_review = CASE WHEN t.status = 'unknown' THEN false ELSE t.needs_review END,
         review_reason = CASE WHEN t.status = 'unknown' THEN NULL ELSE t.review_reason END
  FROM unnest(p_task_ids, p_upstream_ids, p_upstream_task_ids, p_response_bodies)
       AS a(task_id, upstream_id, upstream_task_id, response_body)
  WHERE t.id = a.task_id AND t.status IN ('submitting', 'unknown')
  RETURNING t.id
$$;

-- The hold for a batch, cheaper per request; same decisions and writes as before. Profiled with
-- perf at 64 concurrent holds on one budget, PostgreSQL spent its time on:
--   * building a jsonb value from the batch's text (parse, then sort every object's keys), which
--     the function only reads once into records: the parameter is now json, read as it is;
--   * the period window, a SQL function called once per request row: now once per budget and
--     acceptance instant;
--   * looking up the task id sequence by name for every new id: now named once, in the plan;
--   * a dozen statements, each with its own executor start-up (most of a small batch's cost):
--     the writes are now one statement.
DROP FUNCTION spendgate_place_holds(jsonb);

-- The hold for a batch: take the projects' locks in a fixed order (no deadlock between
-- instances), then, when every hard budget the batch touches can take the batch's whole total
-- (the common case), write all tasks, lines and holds with one set-based statement; otherwise
-- (near a limit, or with Idempotency-Keys) decide request by request in order. Either way each
-- hard budget's spent + held + holds stays within its limit. One transaction, one round trip;
-- the JSON is parsed once.
CREATE FUNCTION spendgate_place_holds(p_requests json)
RETURNS TABLE (i int, outcome text, task_id bigint, budget_id uuid, budget_limit numeric,
               budget_remaining numeric, budget_period "Period", budget_hard boolean, response_body text)
LANGUAGE plpgsql AS $$
DECLARE
  batch_at timestamptz := clock_timestamp();
  reqs spendgate_hold_request[];
  fits boolean;
  s_bid uuid[];
  s_start timestamptz[];
  s_at timestamptz[];
  s_total numeric[];
BEGIN
  reqs := ARRAY(SELECT r FROM json_populate_recordset(NULL::spendgate_hold_request, p_requests) r ORDER BY r.i);

  PERFORM spendgate_lock_project(p) FROM (SELECT DISTINCT x.project_id AS p FROM unnest(reqs) x) q
  ORDER BY hashtextextended(p::text, 7);

  IF EXISTS (SELECT 1 FROM unnest(reqs) x WHERE x.idempotency_key IS NOT NULL) THEN
    RETURN QUERY SELECT * FROM spendgate_place_holds_in_order(reqs);
    RETURN;
  END IF;

  -- Every (budget, period window) the batch touches, with the batch's total for it. The window is
  -- computed once per budget and acceptance instant (one instant for the whole batch, unless tests
  -- set them), not once per request.
  SELECT array_agg(k.bid), array_agg(k.period_start), array_agg(k.at), array_agg(k.total)
  INTO s_bid, s_start, s_at, s_total
  FROM (SELECT g.bid, w.period_start, min(g.at) AS at, sum(g.total) AS total
        FROM (SELECT b.id AS bid, b.period, coalesce(x.accepted_at, batch_at) AS at, sum(x.hold_amount) AS total
              FROM unnest(reqs) x
              JOIN budget b ON b.project_id = x.project_id AND b.unit = x.unit AND b.deleted_at IS NULL
              GROUP BY b.id, b.period, coalesce(x.accepted_at, batch_at)) g
        CROSS JOIN LATERAL spendgate_period_window(g.period, g.at) w
        GROUP BY g.bid, w.period_start) k;

  PERFORM spendgate_budget_period(k.bid, k.at) FROM unnest(s_bid, s_start, s_at) AS k(bid, period_start, at)
  WHERE NOT EXISTS (SELECT 1 FROM budget_period p WHERE p.budget_id = k.bid AND p.period_start = k.period_start);

  SELECT coalesce(bool_and(NOT b.hard OR p.spent + p.held + k.total <= b."limit"), true) INTO fits
  FROM unnest(s_bid, s_start, s_total) AS k(bid, period_start, total)
  JOIN budget b ON b.id = k.bid
  JOIN budget_period p ON p.budget_id = k.bid AND p.period_start = k.period_start;

  IF NOT fits THEN
    RETURN QUERY SELECT * FROM spendgate_place_holds_in_order(reqs);
    RETURN;
  END IF;

  -- One statement writes the batch: tasks, estimate lines, holds, budget periods and alerts (fewer
  -- statements, each with its own executor start-up, was the larger part of a small batch's cost).
  -- The foreign-key checks of the lines against their tasks run at the statement's end, when the
  -- tasks are there. `n` is evaluated once (a CTE with a volatile function): one id per request.
  RETURN QUERY
  WITH n AS (SELECT x.*, nextval('task_id_seq'::regclass) AS task_id, coalesce(x.accepted_at, batch_at) AS at FROM unnest(reqs) x),
  t AS (
    INSERT INTO task (id, project_id, api_key_id, model, family, kind, unit, status, price_basis, price_book_version,
                      exactness, estimate_amount, estimate_tier, estimate_warnings, hold_amount, accepted_at, updated_at)
    SELECT n.task_id, n.project_id, n.api_key_id, n.model, n.family, n.kind, n.unit, 'submitting', n.price_basis,
           n.price_book_version, n.exactness, n.estimate_amount, n.estimate_tier, coalesce(n.estimate_warnings, '{}'),
           n.hold_amount, n.at, n.at
    FROM n
  ),
  l AS (
    INSERT INTO charge_line (task_id, stage, seq, component, quantity, rate, per, amount)
    SELECT n.task_id, 'estimate', l.ordinality::int, l.value->>'component', (l.value->>'quantity')::numeric,
           (l.value->>'rate')::numeric, (l.value->>'per')::numeric, (l.value->>'amount')::numeric
    FROM n, jsonb_array_elements(coalesce(n.lines, '[]'::jsonb)) WITH ORDINALITY l
  ),
  e AS (
    INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at)
    SELECT n.project_id, n.task_id, 'hold', n.unit, n.hold_amount, n.at FROM n WHERE n.hold_amount > 0
  ),
  raised AS (
    UPDATE budget_period p SET held = p.held + k.total
    FROM unnest(s_bid, s_start, s_total) AS k(bid, period_start, total)
    WHERE p.budget_id = k.bid AND p.period_start = k.period_start AND k.total > 0
    RETURNING p.budget_id, p.period_start, p.spent + p.held AS after, k.total
  ),
  a AS (
    INSERT INTO budget_alert (budget_id, period_start, threshold, used_amount)
    SELECT u.budget_id, u.period_start, th, u.after
    FROM raised u JOIN budget b ON b.id = u.budget_id, unnest(b.thresholds) th
    WHERE u.after - u.total < b."limit" * th / 100 AND u.after >= b."limit" * th / 100
    ON CONFLICT DO NOTHING
  )
  SELECT n.i, 'held'::text, n.task_id, NULL::uuid, NULL::numeric, NULL::numeric, NULL::"Period", NULL::boolean, NULL::text
  FROM n;
END $$;
