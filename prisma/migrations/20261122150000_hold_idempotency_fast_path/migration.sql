-- Hand-written. Submissions with an Idempotency-Key take the set-based hold.
--
-- Until now any key in a batch sent the whole batch down the in-order path, request by request,
-- about a dozen statements each. Measured with a unique key on every chat submission (64
-- connections, one project, track_functions): 1.1 ms of PostgreSQL time per hold in that path
-- against ~0.1 ms set-based, and 483-706 submissions/s against 3,330-3,395 without keys in the same
-- minutes. The in-order path is needed only to answer a key that was seen before (replay,
-- conflict, in progress) or that a batch carries twice; a batch of new, distinct keys now takes
-- the set-based statement, which also writes each task's key and request hash.
--
-- The function is restated whole (PostgreSQL replaces a function body as a unit); apart from the
-- key check and the two key columns it is the one from 20261122120000_ledger_hot_path.

-- Whether any request of the batch carries a key its project has used before: one probe of the
-- (project_id, idempotency_key) index per request. The plan is pinned for the reason given for
-- spendgate_record_accepted in 20261122120000_ledger_hot_path: before statistics exist, or while
-- they say the task table is small, the planner hash-joins a sequential scan of every task into
-- the batch (seen with auto_explain: 3,200 tasks read for a batch of 64 on a fresh database).
-- With statistics it is an index-only probe of task_project_idempotency_key: 0.13 ms for 64 keys.
-- Before the first ANALYZE of task (autovacuum's, within a minute of the first submissions) it
-- may still probe the project's accepted_at index and filter by key, as the in-order path's own
-- key lookup may: both index paths look alike to the planner without statistics.
CREATE FUNCTION spendgate_idempotency_keys_seen(p_requests spendgate_hold_request[])
RETURNS boolean
LANGUAGE sql STABLE
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off
AS $$
  SELECT EXISTS (SELECT 1 FROM unnest(p_requests) x
                 JOIN task t ON t.project_id = x.project_id AND t.idempotency_key = x.idempotency_key
                 -- The partial index's predicate, stated on task itself, so that the index
                 -- qualifies from this relation's own clauses and not only through the join.
                 WHERE t.idempotency_key IS NOT NULL)
$$;

-- The hold for a batch: take the projects' locks in a fixed order (no deadlock between
-- instances), then, when every hard budget the batch touches can take the batch's whole total
-- (the common case), write all tasks, lines and holds with one set-based statement; otherwise
-- (near a limit, or an Idempotency-Key seen before) decide request by request in order. Either way
-- each hard budget's spent + held + holds stays within its limit. One transaction, one round trip;
-- the JSON is parsed once.
CREATE OR REPLACE FUNCTION spendgate_place_holds(p_requests json)
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

  -- A key seen before (a replay, a conflict, or a request still in progress) or twice in this
  -- batch is decided in order, which answers it. New keys take the set-based path below. The
  -- projects' locks are held, so no other batch can use one of these keys before this commits;
  -- the unique index on (project_id, idempotency_key) backs that up.
  -- (Batches without keys pay only the first, cheap test.)
  IF EXISTS (SELECT 1 FROM unnest(reqs) x WHERE x.idempotency_key IS NOT NULL) THEN
    IF spendgate_idempotency_keys_seen(reqs)
       OR EXISTS (SELECT 1 FROM unnest(reqs) x WHERE x.idempotency_key IS NOT NULL
                  GROUP BY x.project_id, x.idempotency_key HAVING count(*) > 1) THEN
      RETURN QUERY SELECT * FROM spendgate_place_holds_in_order(reqs);
      RETURN;
    END IF;
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
                      exactness, estimate_amount, estimate_tier, estimate_warnings, hold_amount,
                      idempotency_key, request_hash, accepted_at, updated_at)
    SELECT n.task_id, n.project_id, n.api_key_id, n.model, n.family, n.kind, n.unit, 'submitting', n.price_basis,
           n.price_book_version, n.exactness, n.estimate_amount, n.estimate_tier, coalesce(n.estimate_warnings, '{}'),
           n.hold_amount, n.idempotency_key, n.request_hash, n.at, n.at
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
