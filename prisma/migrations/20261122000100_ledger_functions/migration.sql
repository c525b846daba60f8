-- The money core's database side: an append-only ledger, budget period windows, the atomic
-- hold for a batch of submissions, and exactly-once settlement. Hand-written (Prisma does not
-- model functions or triggers); the schema's tables come from the previous migration.

-- Double postings are impossible: one hold, one release and one charge per task at most.
CREATE UNIQUE INDEX "ledger_entry_task_kind_once" ON "ledger_entry" ("task_id", "kind")
  WHERE "task_id" IS NOT NULL AND "kind" IN ('hold', 'release', 'charge');

-- Partial indexes on task, so that the hold's insert maintains only what it needs.
CREATE UNIQUE INDEX "task_project_idempotency_key" ON "task" ("project_id", "idempotency_key")
  WHERE "idempotency_key" IS NOT NULL;
CREATE INDEX "task_due_for_poll" ON "task" ("next_poll_at") WHERE "status" = 'processing';

-- Append-only: corrections are new entries, never edits.
CREATE FUNCTION spendgate_ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ledger_entry is append-only: % refused; post an adjustment instead', TG_OP
    USING ERRCODE = 'raise_exception';
END $$;
CREATE TRIGGER ledger_entry_append_only BEFORE UPDATE OR DELETE ON "ledger_entry"
  FOR EACH ROW EXECUTE FUNCTION spendgate_ledger_append_only();
CREATE TRIGGER ledger_entry_no_truncate BEFORE TRUNCATE ON "ledger_entry"
  FOR EACH STATEMENT EXECUTE FUNCTION spendgate_ledger_append_only();

-- Calendar windows in UTC. LIFETIME is one window from 1970 to 10000.
CREATE FUNCTION spendgate_period_window(p "Period", at timestamptz, OUT period_start timestamptz, OUT period_end timestamptz)
LANGUAGE sql IMMUTABLE AS $$
  SELECT s, e FROM (
    SELECT CASE p
             WHEN 'DAILY' THEN date_trunc('day', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
             WHEN 'WEEKLY' THEN date_trunc('week', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
             WHEN 'MONTHLY' THEN date_trunc('month', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
             ELSE timestamptz '1970-01-01 00:00:00+00'
           END AS s
  ) w, LATERAL (
    SELECT CASE p
             WHEN 'DAILY' THEN ((w.s AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC'
             WHEN 'WEEKLY' THEN ((w.s AT TIME ZONE 'UTC') + interval '1 week') AT TIME ZONE 'UTC'
             WHEN 'MONTHLY' THEN ((w.s AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC'
             ELSE timestamptz '10000-01-01 00:00:00+00'
           END AS e
  ) x;
$$;

-- What the ledger says a project's balance is in one unit and window: the derivation that
-- budget_period rows must always equal (spendgate reconcile checks it).
CREATE FUNCTION spendgate_ledger_balance(p_project uuid, p_unit "Unit", p_start timestamptz, p_end timestamptz,
                                         OUT spent numeric, OUT held numeric)
LANGUAGE sql STABLE AS $$
  SELECT coalesce(sum(amount) FILTER (WHERE kind IN ('charge', 'adjustment')), 0),
         coalesce(sum(amount) FILTER (WHERE kind = 'hold'), 0) - coalesce(sum(amount) FILTER (WHERE kind = 'release'), 0)
  FROM ledger_entry
  WHERE project_id = p_project AND unit = p_unit AND effective_at >= p_start AND effective_at < p_end;
$$;

-- Every project-scoped money movement takes this lock first, so balances of one project change
-- one transaction at a time, whatever the number of gateway instances.
CREATE FUNCTION spendgate_lock_project(p_project uuid) RETURNS void LANGUAGE sql AS $$
  SELECT pg_advisory_xact_lock(hashtextextended(p_project::text, 7));
$$;

-- The budget's period row for the window containing `at`, created from the ledger when missing.
-- Call with the project lock held.
CREATE FUNCTION spendgate_budget_period(p_budget uuid, at timestamptz) RETURNS budget_period
LANGUAGE plpgsql AS $$
DECLARE
  b budget;
  w record;
  bp budget_period;
BEGIN
  SELECT * INTO b FROM budget WHERE id = p_budget;
  SELECT * INTO w FROM spendgate_period_window(b.period, at);
  SELECT * INTO bp FROM budget_period WHERE budget_id = p_budget AND period_start = w.period_start;
  IF NOT FOUND THEN
    INSERT INTO budget_period (budget_id, period_start, period_end, spent, held)
    SELECT p_budget, w.period_start, w.period_end, l.spent, l.held
    FROM spendgate_ledger_balance(b.project_id, b.unit, w.period_start, w.period_end) l
    RETURNING * INTO bp;
  END IF;
  RETURN bp;
END $$;

-- Records each alert threshold a budget's use crossed going from `before` to `after`.
CREATE FUNCTION spendgate_record_crossings(p_budget uuid, p_period_start timestamptz, p_limit numeric,
                                           p_thresholds int[], p_before numeric, p_after numeric)
RETURNS void LANGUAGE sql AS $$
  INSERT INTO budget_alert (budget_id, period_start, threshold, used_amount)
  SELECT p_budget, p_period_start, t, p_after
  FROM unnest(p_thresholds) t
  WHERE p_before < p_limit * t / 100 AND p_after >= p_limit * t / 100
  ON CONFLICT DO NOTHING;
$$;

-- One hold request, as the gateway sends it (a batch is a JSON array of these; i is the
-- request's position, from 0).
CREATE TYPE spendgate_hold_request AS (
  i int, project_id uuid, api_key_id uuid, model text, family text, kind text, unit "Unit",
  hold_amount numeric, estimate_amount numeric, exactness "Exactness", estimate_tier text,
  estimate_warnings text[], price_basis jsonb, price_book_version int, lines jsonb,
  idempotency_key text, request_hash text, accepted_at timestamptz);

-- The hold, one request after the other: check every budget of the submission's unit and, when
-- no hard budget would pass its limit, write the task, its estimate lines and its hold and raise
-- the budgets' held amounts. The exact path, used when a batch does not fit as a whole.
-- Returns one row per request: outcome held | refused | replay | conflict | in_progress.
CREATE FUNCTION spendgate_place_holds_in_order(p_requests spendgate_hold_request[])
RETURNS TABLE (i int, outcome text, task_id bigint, budget_id uuid, budget_limit numeric,
               budget_remaining numeric, budget_period "Period", budget_hard boolean, response_body text)
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
    -- The acceptance instant decides the budget period; the gateway never sets it (tests do).
    at := coalesce(r.accepted_at, batch_at);
    i := r.i; task_id := NULL; budget_id := NULL; budget_limit := NULL; budget_remaining := NULL;
    budget_period := NULL; budget_hard := NULL; response_body := NULL;

    IF r.idempotency_key IS NOT NULL THEN
      SELECT t.id, t.request_hash, t.response_body, t.status INTO existing
      FROM task t WHERE t.project_id = r.project_id AND t.idempotency_key = r.idempotency_key;
      IF FOUND THEN
        task_id := existing.id;
        IF existing.request_hash IS DISTINCT FROM r.request_hash THEN outcome := 'conflict';
        ELSIF existing.response_body IS NOT NULL THEN outcome := 'replay'; response_body := existing.response_body;
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
        SELECT b.id AS id, b."limit" AS lim, greatest(b."limit" - bp.spent - bp.held, 0) AS remaining,
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
                      exactness, estimate_amount, estimate_tier, estimate_warnings, hold_amount,
                      idempotency_key, request_hash, accepted_at, updated_at)
    VALUES (r.project_id, r.api_key_id, r.model, r.family, r.kind, r.unit, 'submitting', r.price_basis,
            r.price_book_version, r.exactness, r.estimate_amount, r.estimate_tier,
            coalesce(r.estimate_warnings, '{}'), amount, r.idempotency_key, r.request_hash, at, at)
    RETURNING id INTO new_task;

    INSERT INTO charge_line (task_id, stage, seq, component, quantity, rate, per, amount)
    SELECT new_task, 'estimate', l.ordinality::int, l.value->>'component', (l.value->>'quantity')::numeric,
           (l.value->>'rate')::numeric, (l.value->>'per')::numeric, (l.value->>'amount')::numeric
    FROM jsonb_array_elements(coalesce(r.lines, '[]'::jsonb)) WITH ORDINALITY l;

    IF amount > 0 THEN
      INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at)
      VALUES (r.project_id, new_task, 'hold', r.unit, amount, at);
      -- Every budget period row checked above, raised in one statement; crossings recorded.
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

-- The hold for a batch: take the projects' locks in a fixed order (no deadlock between
-- instances), then, when every hard budget the batch touches can take the batch's whole total
-- (the common case), write all tasks, lines and holds with a few set-based statements; otherwise
-- (near a limit, or with Idempotency-Keys) decide request by request in order. Either way each
-- hard budget's spent + held + holds stays within its limit. One transaction, one round trip;
-- the JSON is parsed once.
CREATE FUNCTION spendgate_place_holds(p_requests jsonb)
RETURNS TABLE (i int, outcome text, task_id bigint, budget_id uuid, budget_limit numeric,
               budget_remaining numeric, budget_period "Period", budget_hard boolean, response_body text)
LANGUAGE plpgsql AS $$
DECLARE
  batch_at timestamptz := clock_timestamp();
  reqs spendgate_hold_request[];
  fits boolean;
  ids bigint[];
  s_bid uuid[];
  s_start timestamptz[];
  s_at timestamptz[];
  s_total numeric[];
BEGIN
  reqs := ARRAY(SELECT r FROM jsonb_populate_recordset(NULL::spendgate_hold_request, p_requests) r ORDER BY r.i);

  PERFORM spendgate_lock_project(p) FROM (SELECT DISTINCT x.project_id AS p FROM unnest(reqs) x) q
  ORDER BY hashtextextended(p::text, 7);

  IF EXISTS (SELECT 1 FROM unnest(reqs) x WHERE x.idempotency_key IS NOT NULL) THEN
    RETURN QUERY SELECT * FROM spendgate_place_holds_in_order(reqs);
    RETURN;
  END IF;

  -- Every (budget, period window) the batch touches, with the batch's total for it.
  SELECT array_agg(k.bid), array_agg(k.period_start), array_agg(k.at), array_agg(k.total)
  INTO s_bid, s_start, s_at, s_total
  FROM (SELECT b.id AS bid, w.period_start, min(coalesce(x.accepted_at, batch_at)) AS at, sum(x.hold_amount) AS total
        FROM unnest(reqs) x
        JOIN budget b ON b.project_id = x.project_id AND b.unit = x.unit AND b.deleted_at IS NULL
        CROSS JOIN LATERAL spendgate_period_window(b.period, coalesce(x.accepted_at, batch_at)) w
        GROUP BY b.id, w.period_start) k;

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

  ids := ARRAY(SELECT nextval(pg_get_serial_sequence('task', 'id')) FROM generate_series(1, cardinality(reqs)));

  INSERT INTO task (id, project_id, api_key_id, model, family, kind, unit, status, price_basis, price_book_version,
                    exactness, estimate_amount, estimate_tier, estimate_warnings, hold_amount, accepted_at, updated_at)
  SELECT ids[x.i + 1], x.project_id, x.api_key_id, x.model, x.family, x.kind, x.unit, 'submitting', x.price_basis,
         x.price_book_version, x.exactness, x.estimate_amount, x.estimate_tier, coalesce(x.estimate_warnings, '{}'),
         x.hold_amount, coalesce(x.accepted_at, batch_at), coalesce(x.accepted_at, batch_at)
  FROM unnest(reqs) x;

  INSERT INTO charge_line (task_id, stage, seq, component, quantity, rate, per, amount)
  SELECT ids[x.i + 1], 'estimate', l.ordinality::int, l.value->>'component', (l.value->>'quantity')::numeric,
         (l.value->>'rate')::numeric, (l.value->>'per')::numeric, (l.value->>'amount')::numeric
  FROM unnest(reqs) x, jsonb_array_elements(coalesce(x.lines, '[]'::jsonb)) WITH ORDINALITY l;

  INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at)
  SELECT x.project_id, ids[x.i + 1], 'hold', x.unit, x.hold_amount, coalesce(x.accepted_at, batch_at)
  FROM unnest(reqs) x WHERE x.hold_amount > 0;

  WITH raised AS (
    UPDATE budget_period p SET held = p.held + k.total
    FROM unnest(s_bid, s_start, s_total) AS k(bid, period_start, total)
    WHERE p.budget_id = k.bid AND p.period_start = k.period_start AND k.total > 0
    RETURNING p.budget_id, p.period_start, p.spent + p.held AS after, k.total
  )
  INSERT INTO budget_alert (budget_id, period_start, threshold, used_amount)
  SELECT u.budget_id, u.period_start, t, u.after
  FROM raised u JOIN budget b ON b.id = u.budget_id, unnest(b.thresholds) t
  WHERE u.after - u.total < b."limit" * t / 100 AND u.after >= b."limit" * t / 100
  ON CONFLICT DO NOTHING;

  RETURN QUERY SELECT x.i, 'held'::text, ids[x.i + 1], NULL::uuid, NULL::numeric, NULL::numeric, NULL::"Period",
                      NULL::boolean, NULL::text
               FROM unnest(reqs) x;
END $$;

-- Moves a task's money in every budget period containing its acceptance: held -= p_release,
-- spent += p_charge. Call with the project lock held.
CREATE FUNCTION spendgate_apply_to_budgets(p_project uuid, p_unit "Unit", p_at timestamptz,
                                           p_release numeric, p_charge numeric)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  b record;
  bp budget_period;
BEGIN
  FOR b IN SELECT * FROM budget WHERE project_id = p_project AND unit = p_unit AND deleted_at IS NULL ORDER BY id LOOP
    bp := spendgate_budget_period(b.id, p_at);
    UPDATE budget_period SET held = held - p_release, spent = spent + p_charge
    WHERE budget_id = b.id AND period_start = bp.period_start;
    PERFORM spendgate_record_crossings(b.id, bp.period_start, b."limit", b.thresholds,
                                       bp.spent + bp.held, bp.spent + bp.held - p_release + p_charge);
  END LOOP;
END $$;

-- Settlement, exactly once: the first caller that finds the task unsettled replaces its hold with
-- the charge (or releases it); every later caller gets false. The budget effect lands in the
-- period of acceptance. `p_rollup` carries the day's counters for spend_rollup.
CREATE FUNCTION spendgate_settle(p_task bigint, p_status "TaskStatus", p_charge numeric, p_exactness "Exactness",
                                 p_tier text, p_warnings text[], p_needs_review boolean, p_review_reason text,
                                 p_usage jsonb, p_lines jsonb, p_rollup jsonb)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  t task;
BEGIN
  SELECT * INTO t FROM task WHERE id = p_task FOR UPDATE;
  IF NOT FOUND OR t.settled_at IS NOT NULL OR t.status IN ('ready', 'failed', 'rejected') THEN
    RETURN false;
  END IF;
  PERFORM spendgate_lock_project(t.project_id);

  UPDATE task SET status = p_status, settled_at = clock_timestamp(), updated_at = clock_timestamp(),
                  charge_amount = p_charge, charge_exactness = p_exactness, charge_tier = p_tier,
                  charge_warnings = coalesce(p_warnings, '{}'), usage = p_usage,
                  needs_review = t.needs_review OR p_needs_review,
                  review_reason = coalesce(p_review_reason, t.review_reason), next_poll_at = NULL
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

  INSERT INTO spend_rollup AS s (day, project_id, model, unit, status, tasks, unpriced_tasks, amount,
                                 input_tokens, output_tokens, cache_read_tokens, cache_write_5m_tokens,
                                 cache_write_1h_tokens, cache_write_tokens, video_seconds, images)
  VALUES ((t.accepted_at AT TIME ZONE 'UTC')::date, t.project_id, t.model, t.unit, p_status::text, 1,
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
  RETURN true;
END $$;

-- The upstream refused the submission with a definite answer: release the hold, charge nothing.
CREATE FUNCTION spendgate_reject(p_task bigint, p_reason text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  t task;
BEGIN
  SELECT * INTO t FROM task WHERE id = p_task FOR UPDATE;
  IF NOT FOUND OR t.status NOT IN ('submitting', 'unknown') OR t.settled_at IS NOT NULL THEN
    RETURN false;
  END IF;
  PERFORM spendgate_lock_project(t.project_id);
  UPDATE task SET status = 'rejected', settled_at = clock_timestamp(), updated_at = clock_timestamp(),
                  charge_amount = 0, review_reason = p_reason, needs_review = false
  WHERE id = p_task;
  IF t.hold_amount > 0 THEN
    INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at, reason)
    VALUES (t.project_id, t.id, 'release', t.unit, t.hold_amount, t.accepted_at, p_reason);
  END IF;
  PERFORM spendgate_apply_to_budgets(t.project_id, t.unit, t.accepted_at, t.hold_amount, 0);
  RETURN true;
END $$;

-- A correction: a new signed entry with a mandatory reason, counted in the period of `p_at`.
CREATE FUNCTION spendgate_adjust(p_project uuid, p_unit "Unit", p_amount numeric, p_reason text,
                                 p_task bigint, p_at timestamptz)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  entry bigint;
BEGIN
  IF p_reason IS NULL OR length(trim(p_reason)) = 0 THEN
    RAISE EXCEPTION 'an adjustment needs a reason';
  END IF;
  PERFORM spendgate_lock_project(p_project);
  INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at, reason)
  VALUES (p_project, p_task, 'adjustment', p_unit, p_amount, p_at, p_reason) RETURNING id INTO entry;
  PERFORM spendgate_apply_to_budgets(p_project, p_unit, p_at, 0, p_amount);
  -- Reports read the roll-up, so an adjustment lands there too (on its task's model, if any).
  INSERT INTO spend_rollup AS s (day, project_id, model, unit, status, amount)
  VALUES ((p_at AT TIME ZONE 'UTC')::date, p_project,
          coalesce((SELECT model FROM task WHERE id = p_task), '(adjustment)'), p_unit, 'adjustment', p_amount)
  ON CONFLICT (day, project_id, model, unit, status) DO UPDATE SET amount = s.amount + EXCLUDED.amount;
  RETURN entry;
END $$;
