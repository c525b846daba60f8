-- Hand-written. The ledger's answers at the edges (issue 19, decisions §6 and §10):
--
-- * settlement above the hold is an overrun: charged in full (finance pays what the vendor
--   bills), but never silent: the task carries the excess, a warning naming estimate, hold,
--   charge and excess, and needs_review; spendgate_settle returns the overrun to its caller;
-- * a hard budget refused because it is already past its limit says by how much: the refusal
--   returns limit − spent − held as it is (negative when overrun) instead of clamping it to 0;
-- * Idempotency-Keys: a definite refusal (spendgate_reject: nothing was charged) frees the key
--   for a retry; a task of unknown outcome keeps it, and a retry gets that outcome's answer again
--   (the stored answer and its status, or `unknown` when the gateway never answered);
-- * an operator resolves a task under review (spendgate_resolve): charge a stated amount or
--   release, with a reason; entries are appended, nothing is edited;
-- * a resolved task is never taken back by a late acceptance record.
--
-- The hold functions are restated whole for the new column in their result (PostgreSQL cannot
-- change a function's result type in place); apart from the points above they are the ones of
-- 20261123123800_estimate_lines_hold.

ALTER TABLE project ADD CONSTRAINT project_chat_hold_multiplier_range
  CHECK (chat_hold_multiplier >= 1 AND chat_hold_multiplier <= 1000);
ALTER TABLE task ADD CONSTRAINT task_resolution_known CHECK (resolution IS NULL OR resolution IN ('CHARGE', 'RELEASE'));

DROP FUNCTION spendgate_place_holds(json);
DROP FUNCTION spendgate_place_holds_in_order(spendgate_hold_request[]);

-- The hold, one request after the other (see 20261122000100_ledger_functions). Outcomes:
-- held | refused | replay | unknown | conflict | in_progress.
CREATE FUNCTION spendgate_place_holds_in_order(p_requests spendgate_hold_request[])
RETURNS TABLE (i int, outcome text, task_id bigint, budget_id uuid, budget_limit numeric,
               budget_remaining numeric, budget_period "Period", budget_hard boolean, response_body text,
               response_status int)
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  b record;
  bp budget_period;
  existing record;
  refused record;
  new_task bigint;
  amount numeric;
  budget_ids uuid[];
  period_starts timestamptz[];
  batch_at timestamptz := clock_timestamp();
  at timestamptz;
BEGIN
  FOR r IN SELECT * FROM unnest(p_requests) x ORDER BY x.i
  LOOP
    at := coalesce(r.accepted_at, batch_at);
    i := r.i; task_id := NULL; budget_id := NULL; budget_limit := NULL; budget_remaining := NULL;
    budget_period := NULL; budget_hard := NULL; response_body := NULL; response_status := NULL;

    IF r.idempotency_key IS NOT NULL THEN
      SELECT t.id, t.request_hash, t.response_body, t.response_status, t.status INTO existing
      FROM task t WHERE t.project_id = r.project_id AND t.idempotency_key = r.idempotency_key;
      IF FOUND THEN
        task_id := existing.id;
        IF existing.request_hash IS DISTINCT FROM r.request_hash THEN outcome := 'conflict';
        ELSIF existing.response_body IS NOT NULL THEN
          outcome := 'replay'; response_body := existing.response_body; response_status := existing.response_status;
        ELSIF existing.status = 'unknown' THEN outcome := 'unknown';
        ELSE outcome := 'in_progress';
        END IF;
        RETURN NEXT; CONTINUE;
      END IF;
    END IF;

    amount := r.hold_amount;
    refused := NULL;
    budget_ids := '{}';
    period_starts := '{}';
    FOR b IN SELECT * FROM budget WHERE project_id = r.project_id AND unit = r.unit AND deleted_at IS NULL ORDER BY id LOOP
      SELECT p.* INTO bp FROM budget_period p, spendgate_period_window(b.period, at) w
      WHERE p.budget_id = b.id AND p.period_start = w.period_start;
      IF NOT FOUND THEN bp := spendgate_budget_period(b.id, at); END IF;
      budget_ids := budget_ids || b.id;
      period_starts := period_starts || bp.period_start;
      IF b.hard AND bp.spent + bp.held + amount > b."limit" THEN
        -- As it is: negative when settled charges ran past the limit (an overrun).
        SELECT b.id AS id, b."limit" AS lim, b."limit" - bp.spent - bp.held AS remaining,
               b.period AS period INTO refused;
        EXIT;
      END IF;
    END LOOP;
    IF refused IS NOT NULL THEN
      outcome := 'refused'; budget_id := refused.id; budget_limit := refused.lim;
      budget_remaining := refused.remaining; budget_period := refused.period; budget_hard := true;
      RETURN NEXT; CONTINUE;
    END IF;

    INSERT INTO task (project_id, api_key_id, model, family, kind, unit, status, price_basis, price_book_version,
                      exactness, estimate_amount, estimate_tier, estimate_warnings, estimate_lines, hold_amount,
                      idempotency_key, request_hash, accepted_at, updated_at)
    VALUES (r.project_id, r.api_key_id, r.model, r.family, r.kind, r.unit, 'submitting', r.price_basis,
            r.price_book_version, r.exactness, r.estimate_amount, r.estimate_tier,
            coalesce(r.estimate_warnings, '{}'), coalesce(r.lines, '{}'), amount, r.idempotency_key, r.request_hash, at, at)
    RETURNING id INTO new_task;

    IF amount > 0 THEN
      INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at)
      VALUES (r.project_id, new_task, 'hold', r.unit, amount, at);
      WITH raised AS (
        UPDATE budget_period p SET held = p.held + amount
        FROM unnest(budget_ids, period_starts) AS k(bid, ps)
        WHERE p.budget_id = k.bid AND p.period_start = k.ps
        RETURNING p.budget_id, p.period_start, p.spent + p.held AS after
      )
      INSERT INTO budget_alert (budget_id, period_start, threshold, used_amount)
      SELECT u.budget_id, u.period_start, t, u.after
      FROM raised u JOIN budget bb ON bb.id = u.budget_id, unnest(bb.thresholds) t
      WHERE u.after - amount < bb."limit" * t / 100 AND u.after >= bb."limit" * t / 100
      ON CONFLICT DO NOTHING;
    END IF;

    outcome := 'held'; task_id := new_task;
    RETURN NEXT;
  END LOOP;
END $$;

-- The hold for a batch (see 20261122150000_hold_idempotency_fast_path for the fast path's why).
CREATE FUNCTION spendgate_place_holds(p_requests json)
RETURNS TABLE (i int, outcome text, task_id bigint, budget_id uuid, budget_limit numeric,
               budget_remaining numeric, budget_period "Period", budget_hard boolean, response_body text,
               response_status int)
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
    IF spendgate_idempotency_keys_seen(reqs)
       OR EXISTS (SELECT 1 FROM unnest(reqs) x WHERE x.idempotency_key IS NOT NULL
                  GROUP BY x.project_id, x.idempotency_key HAVING count(*) > 1) THEN
      RETURN QUERY SELECT * FROM spendgate_place_holds_in_order(reqs);
      RETURN;
    END IF;
  END IF;

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

  RETURN QUERY
  WITH n AS (SELECT x.*, nextval('task_id_seq'::regclass) AS task_id, coalesce(x.accepted_at, batch_at) AS at FROM unnest(reqs) x),
  t AS (
    INSERT INTO task (id, project_id, api_key_id, model, family, kind, unit, status, price_basis, price_book_version,
                      exactness, estimate_amount, estimate_tier, estimate_warnings, estimate_lines, hold_amount,
                      idempotency_key, request_hash, accepted_at, updated_at)
    SELECT n.task_id, n.project_id, n.api_key_id, n.model, n.family, n.kind, n.unit, 'submitting', n.price_basis,
           n.price_book_version, n.exactness, n.estimate_amount, n.estimate_tier, coalesce(n.estimate_warnings, '{}'),
           coalesce(n.lines, '{}'), n.hold_amount, n.idempotency_key, n.request_hash, n.at, n.at
    FROM n
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
  SELECT n.i, 'held'::text, n.task_id, NULL::uuid, NULL::numeric, NULL::numeric, NULL::"Period", NULL::boolean, NULL::text, NULL::int
  FROM n;
END $$;

-- Settlement, exactly once (see 20261122000100_ledger_functions), now overrun-aware: a charge
-- above the hold is charged in full and flagged. Returns whether this call settled and the
-- overrun (charge − hold) when there is one.
DROP FUNCTION spendgate_settle(bigint, "TaskStatus", numeric, "Exactness", text, text[], boolean, text, jsonb, jsonb, jsonb);
CREATE FUNCTION spendgate_settle(p_task bigint, p_status "TaskStatus", p_charge numeric, p_exactness "Exactness",
                                 p_tier text, p_warnings text[], p_needs_review boolean, p_review_reason text,
                                 p_usage jsonb, p_lines jsonb, p_rollup jsonb)
RETURNS TABLE (settled boolean, overrun numeric)
LANGUAGE plpgsql AS $$
DECLARE
  t task;
  excess numeric;
  warning text;
BEGIN
  SELECT * INTO t FROM task WHERE id = p_task FOR UPDATE;
  IF NOT FOUND OR t.settled_at IS NOT NULL OR t.status IN ('ready', 'failed', 'rejected') THEN
    settled := false; overrun := NULL; RETURN NEXT; RETURN;
  END IF;
  PERFORM spendgate_lock_project(t.project_id);

  excess := CASE WHEN p_charge > t.hold_amount THEN p_charge - t.hold_amount END;
  warning := CASE WHEN excess IS NOT NULL THEN
    format('overrun: charged %s %s against a hold of %s (estimate %s), %s above the hold; the budgets of this unit count the whole charge',
           p_charge, t.unit, t.hold_amount, t.estimate_amount, excess) END;

  UPDATE task SET status = p_status, settled_at = clock_timestamp(), updated_at = clock_timestamp(),
                  charge_amount = p_charge, charge_exactness = p_exactness, charge_tier = p_tier,
                  charge_warnings = coalesce(p_warnings, '{}') || CASE WHEN warning IS NULL THEN '{}'::text[] ELSE ARRAY[warning] END,
                  usage = p_usage, overrun = excess,
                  needs_review = t.needs_review OR p_needs_review OR excess IS NOT NULL,
                  review_reason = coalesce(p_review_reason, warning, t.review_reason), next_poll_at = NULL
  WHERE id = p_task;

  IF t.hold_amount > 0 THEN
    INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at)
    VALUES (t.project_id, t.id, 'release', t.unit, t.hold_amount, t.accepted_at);
  END IF;
  IF p_charge <> 0 THEN
    INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at)
    VALUES (t.project_id, t.id, 'charge', t.unit, p_charge, t.accepted_at);
  END IF;
  PERFORM spendgate_apply_to_budgets(t.project_id, t.unit, t.accepted_at, t.hold_amount, p_charge);

  INSERT INTO charge_line (task_id, stage, seq, component, quantity, rate, per, amount)
  SELECT p_task, 'charge', l.ordinality::int, l.value->>'component', (l.value->>'quantity')::numeric,
         (l.value->>'rate')::numeric, (l.value->>'per')::numeric, (l.value->>'amount')::numeric
  FROM jsonb_array_elements(coalesce(p_lines, '[]'::jsonb)) WITH ORDINALITY l;

  PERFORM spendgate_rollup_add(t, p_status::text, p_exactness, p_charge, p_rollup);
  settled := true; overrun := excess;
  RETURN NEXT;
END $$;

-- One settled task's counters into its day's roll-up row (by outcome); spend_rollup_total follows
-- by trigger. Shared by settlement and resolution.
CREATE FUNCTION spendgate_rollup_add(t task, p_status text, p_exactness "Exactness", p_charge numeric, p_rollup jsonb)
RETURNS void LANGUAGE sql AS $$
  INSERT INTO spend_rollup AS s (day, project_id, model, unit, status, tasks, unpriced_tasks, amount,
                                 input_tokens, output_tokens, cache_read_tokens, cache_write_5m_tokens,
                                 cache_write_1h_tokens, cache_write_tokens, video_seconds, images)
  VALUES ((t.accepted_at AT TIME ZONE 'UTC')::date, t.project_id, t.model, t.unit, p_status, 1,
          CASE WHEN p_exactness = 'UNPRICED' THEN 1 ELSE 0 END, p_charge,
          coalesce((p_rollup->>'input_tokens')::bigint, 0), coalesce((p_rollup->>'output_tokens')::bigint, 0),
          coalesce((p_rollup->>'cache_read_tokens')::bigint, 0), coalesce((p_rollup->>'cache_write_5m_tokens')::bigint, 0),
          coalesce((p_rollup->>'cache_write_1h_tokens')::bigint, 0), coalesce((p_rollup->>'cache_write_tokens')::bigint, 0),
          coalesce((p_rollup->>'video_seconds')::numeric, 0), coalesce((p_rollup->>'images')::int, 0))
  ON CONFLICT (day, project_id, model, unit, status) DO UPDATE SET
    tasks = s.tasks + 1, unpriced_tasks = s.unpriced_tasks + EXCLUDED.unpriced_tasks,
    amount = s.amount + EXCLUDED.amount, input_tokens = s.input_tokens + EXCLUDED.input_tokens,
    output_tokens = s.output_tokens + EXCLUDED.output_tokens,
    cache_read_tokens = s.cache_read_tokens + EXCLUDED.cache_read_tokens,
    cache_write_5m_tokens = s.cache_write_5m_tokens + EXCLUDED.cache_write_5m_tokens,
    cache_write_1h_tokens = s.cache_write_1h_tokens + EXCLUDED.cache_write_1h_tokens,
    cache_write_tokens = s.cache_write_tokens + EXCLUDED.cache_write_tokens,
    video_seconds = s.video_seconds + EXCLUDED.video_seconds, images = s.images + EXCLUDED.images;
$$;

-- The upstream refused the submission with a definite answer: release the hold, charge nothing,
-- and free the task's Idempotency-Key, so that a retry with it is a new request (decisions §10).
CREATE OR REPLACE FUNCTION spendgate_reject(p_task bigint, p_reason text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  t task;
BEGIN
  SELECT * INTO t FROM task WHERE id = p_task FOR UPDATE;
  IF NOT FOUND OR t.status NOT IN ('submitting', 'unknown') OR t.settled_at IS NOT NULL THEN
    RETURN false;
  END IF;
  PERFORM spendgate_lock_project(t.project_id);
  UPDATE task SET status = 'rejected', settled_at = clock_timestamp(), updated_at = clock_timestamp(),
                  charge_amount = 0, review_reason = p_reason, needs_review = false, idempotency_key = NULL
  WHERE id = p_task;
  IF t.hold_amount > 0 THEN
    INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at, reason)
    VALUES (t.project_id, t.id, 'release', t.unit, t.hold_amount, t.accepted_at, p_reason);
  END IF;
  PERFORM spendgate_apply_to_budgets(t.project_id, t.unit, t.accepted_at, t.hold_amount, 0);
  RETURN true;
END $$;

-- An operator's decision on a task under review (decisions §10), once per task:
-- * not settled (an unknown outcome, hold kept): the hold is released and `p_amount` charged
--   (CHARGE; the hold by default) or nothing (RELEASE); the task keeps status `unknown` (the
--   vendor's outcome stays unknown) and is settled by this decision;
-- * settled (at its estimate, with an overrun, or other review): an adjustment brings what the
--   task costs to `p_amount` (CHARGE; the hold by default) or to 0 (RELEASE), counted in the
--   period of the task's acceptance.
-- Returns the amount this decision added to the ledger's spend (may be negative).
CREATE FUNCTION spendgate_resolve(p_task bigint, p_outcome text, p_amount numeric, p_reason text)
RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE
  t task;
  target numeric;
  delta numeric;
BEGIN
  IF p_reason IS NULL OR length(trim(p_reason)) = 0 THEN
    RAISE EXCEPTION 'a resolution needs a reason' USING ERRCODE = 'check_violation';
  END IF;
  SELECT * INTO t FROM task WHERE id = p_task FOR UPDATE;
  IF NOT FOUND THEN RAISE EXCEPTION 'task % not found', p_task USING ERRCODE = 'no_data_found'; END IF;
  IF t.resolved_at IS NOT NULL THEN
    RAISE EXCEPTION 'task % was already resolved (%)', p_task, t.resolution USING ERRCODE = 'unique_violation';
  END IF;
  IF NOT t.needs_review THEN
    RAISE EXCEPTION 'task % is not under review', p_task USING ERRCODE = 'check_violation';
  END IF;
  IF t.status IN ('submitting', 'processing') THEN
    RAISE EXCEPTION 'task % is still in flight (%): it settles by itself', p_task, t.status USING ERRCODE = 'check_violation';
  END IF;
  target := CASE p_outcome WHEN 'CHARGE' THEN coalesce(p_amount, t.hold_amount) ELSE 0 END;
  IF target < 0 THEN RAISE EXCEPTION 'a charge cannot be negative' USING ERRCODE = 'check_violation'; END IF;
  PERFORM spendgate_lock_project(t.project_id);

  IF t.settled_at IS NULL THEN
    IF t.hold_amount > 0 THEN
      INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at, reason)
      VALUES (t.project_id, t.id, 'release', t.unit, t.hold_amount, t.accepted_at, 'resolved: ' || p_reason);
    END IF;
    IF target <> 0 THEN
      INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at, reason)
      VALUES (t.project_id, t.id, 'charge', t.unit, target, t.accepted_at, 'resolved: ' || p_reason);
    END IF;
    PERFORM spendgate_apply_to_budgets(t.project_id, t.unit, t.accepted_at, t.hold_amount, target);
    PERFORM spendgate_rollup_add(t, 'resolved', t.exactness, target, '{}'::jsonb);
    UPDATE task SET settled_at = clock_timestamp(), updated_at = clock_timestamp(), charge_amount = target,
                    charge_exactness = t.exactness, next_poll_at = NULL
    WHERE id = p_task;
    delta := target;
  ELSE
    delta := target - coalesce(t.charge_amount, 0);
    IF delta <> 0 THEN
      PERFORM spendgate_adjust(t.project_id, t.unit, delta, 'resolved ' || lower(p_outcome) || ': ' || p_reason, t.id, t.accepted_at);
    END IF;
  END IF;

  UPDATE task SET needs_review = false, resolution = p_outcome, resolution_reason = p_reason,
                  resolved_at = clock_timestamp(), updated_at = clock_timestamp()
  WHERE id = p_task;
  RETURN delta;
END $$;

-- Recording acceptance (see 20261122120000_ledger_hot_path), never for a task an operator has
-- already resolved (settled_at set) while its answer was lost.
CREATE OR REPLACE FUNCTION spendgate_record_accepted(p_task_ids bigint[], p_upstream_ids text[], p_upstream_task_ids bigint[],
                                                     p_response_bodies text[])
RETURNS SETOF bigint LANGUAGE sql
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off
AS $$
  UPDATE task t SET status = 'processing', upstream_id = a.upstream_id, upstream_task_id = a.upstream_task_id,
         response_body = a.response_body, response_status = NULL, submitted_at = clock_timestamp(), updated_at = clock_timestamp(),
         next_poll_at = clock_timestamp() + interval '1 second',
         needs_review = CASE WHEN t.status = 'unknown' THEN false ELSE t.needs_review END,
         review_reason = CASE WHEN t.status = 'unknown' THEN NULL ELSE t.review_reason END
  FROM unnest(p_task_ids, p_upstream_ids, p_upstream_task_ids, p_response_bodies)
       AS a(task_id, upstream_id, upstream_task_id, response_body)
  WHERE t.id = a.task_id AND t.status IN ('submitting', 'unknown') AND t.settled_at IS NULL
  RETURNING t.id
$$;
