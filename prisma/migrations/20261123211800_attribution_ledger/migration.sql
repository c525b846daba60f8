-- Hand-written. Attribution (decisions §7): a task's API key, end user and tags decide which
-- budgets count it; spend by key, user and tag is rolled up for reports and the FOCUS export.
--
-- * A budget's scope is PROJECT, API_KEY, TAG, USER or EACH_USER. spendgate_budget_subject says,
--   for a budget and a task's attribution, under which subject the budget counts the task ('' for
--   every scope but EACH_USER, whose subject is the end user) or NULL when it does not count it.
--   Every function that moves a budget's balance (the hold, settlement, release, adjustments,
--   resolution) and the ledger's own derivation of a balance use it: admission stays one atomic
--   step, whatever the scopes, and reconcile proves every scoped balance from the ledger.
-- * budget_period and budget_alert rows carry that subject: an EACH_USER budget has one balance
--   (and one set of threshold crossings) per user and period, made on the user's first use.
-- * A period row made on the way to moving money was derived from the ledger after the
--   movement's entries were written, so it already holds the movement: spendgate_apply_to_budgets
--   now moves only rows that existed before (the old body counted such a movement twice, for a
--   task accepted in a window the budget had no row for yet).
-- * spend_rollup_by is kept with spend_rollup, in the same transactions; existing settled tasks
--   and adjustments are rolled up below.
--
-- Functions are restated whole (PostgreSQL replaces a body as a unit); the hold functions' result
-- gains the refusing budget's scope, so they are dropped and created again.

ALTER TABLE budget ADD CONSTRAINT budget_scope_value_fits CHECK (
  (scope = 'PROJECT' AND scope_key_id IS NULL AND scope_value IS NULL)
  OR (scope = 'API_KEY' AND scope_key_id IS NOT NULL AND scope_value IS NULL)
  OR (scope IN ('TAG', 'USER') AND scope_key_id IS NULL AND scope_value IS NOT NULL)
  OR (scope = 'EACH_USER' AND scope_key_id IS NULL AND scope_value IS NULL));

-- One end user's tasks of a project: an EACH_USER balance is derived from them (only tasks that
-- name a user are in it, so submissions without one pay nothing for it).
CREATE INDEX task_project_end_user ON task (project_id, end_user) WHERE end_user IS NOT NULL;

ALTER TYPE spendgate_hold_request ADD ATTRIBUTE end_user text, ADD ATTRIBUTE tags text[];

-- Under which subject a budget of this scope counts a task with this attribution; NULL: it does
-- not. Entries without a task (an adjustment of the project) count for PROJECT budgets only.
CREATE FUNCTION spendgate_budget_subject(p_scope "BudgetScope", p_scope_key uuid, p_scope_value text,
                                         p_has_task boolean, p_key uuid, p_user text, p_tags text[])
RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN p_scope = 'PROJECT' THEN ''
    WHEN NOT p_has_task THEN NULL
    WHEN p_scope = 'API_KEY' THEN CASE WHEN p_scope_key = p_key THEN '' END
    WHEN p_scope = 'TAG' THEN CASE WHEN p_scope_value = ANY (p_tags) THEN '' END
    WHEN p_scope = 'USER' THEN CASE WHEN p_scope_value = p_user THEN '' END
    ELSE p_user -- EACH_USER: the user's own balance (none without a user)
  END
$$;

-- What the ledger says one budget's balance is, for one subject, in one window.
CREATE FUNCTION spendgate_budget_balance(p_budget uuid, p_subject text, p_start timestamptz, p_end timestamptz,
                                         OUT spent numeric, OUT held numeric)
LANGUAGE plpgsql STABLE AS $$
DECLARE
  b budget;
BEGIN
  SELECT * INTO b FROM budget WHERE id = p_budget;
  IF b.scope = 'PROJECT' THEN
    SELECT l.spent, l.held INTO spent, held FROM spendgate_ledger_balance(b.project_id, b.unit, p_start, p_end) l;
  ELSIF b.scope = 'EACH_USER' THEN
    -- The user's tasks first (task_project_end_user), then their entries.
    SELECT coalesce(sum(e.amount) FILTER (WHERE e.kind IN ('charge', 'adjustment')), 0),
           coalesce(sum(e.amount) FILTER (WHERE e.kind = 'hold'), 0) - coalesce(sum(e.amount) FILTER (WHERE e.kind = 'release'), 0)
    INTO spent, held
    FROM task t JOIN ledger_entry e ON e.task_id = t.id
    WHERE t.project_id = b.project_id AND t.end_user = p_subject AND e.unit = b.unit
      AND e.effective_at >= p_start AND e.effective_at < p_end;
  ELSE
    SELECT coalesce(sum(e.amount) FILTER (WHERE e.kind IN ('charge', 'adjustment')), 0),
           coalesce(sum(e.amount) FILTER (WHERE e.kind = 'hold'), 0) - coalesce(sum(e.amount) FILTER (WHERE e.kind = 'release'), 0)
    INTO spent, held
    FROM ledger_entry e JOIN task t ON t.id = e.task_id
    WHERE e.project_id = b.project_id AND e.unit = b.unit AND e.effective_at >= p_start AND e.effective_at < p_end
      AND spendgate_budget_subject(b.scope, b.scope_key_id, b.scope_value, true, t.api_key_id, t.end_user, coalesce(t.tags, '{}')) = p_subject;
  END IF;
END $$;

-- The budget's period row for the window containing `at`, for one subject, made from the ledger
-- when missing. Call with the project lock held.
DROP FUNCTION spendgate_budget_period(uuid, timestamptz);
CREATE FUNCTION spendgate_budget_period(p_budget uuid, at timestamptz, p_subject text DEFAULT '') RETURNS budget_period
LANGUAGE plpgsql AS $$
DECLARE
  b budget;
  w record;
  bp budget_period;
BEGIN
  SELECT * INTO b FROM budget WHERE id = p_budget;
  SELECT * INTO w FROM spendgate_period_window(b.period, at);
  SELECT * INTO bp FROM budget_period WHERE budget_id = p_budget AND period_start = w.period_start AND subject = p_subject;
  IF NOT FOUND THEN
    INSERT INTO budget_period (budget_id, period_start, subject, period_end, spent, held)
    SELECT p_budget, w.period_start, p_subject, w.period_end, l.spent, l.held
    FROM spendgate_budget_balance(p_budget, p_subject, w.period_start, w.period_end) l
    RETURNING * INTO bp;
  END IF;
  RETURN bp;
END $$;

DROP FUNCTION spendgate_record_crossings(uuid, timestamptz, numeric, integer[], numeric, numeric);
CREATE FUNCTION spendgate_record_crossings(p_budget uuid, p_period_start timestamptz, p_subject text, p_limit numeric,
                                           p_thresholds int[], p_before numeric, p_after numeric)
RETURNS void LANGUAGE sql AS $$
  INSERT INTO budget_alert (budget_id, period_start, subject, threshold, used_amount)
  SELECT p_budget, p_period_start, p_subject, t, p_after
  FROM unnest(p_thresholds) t
  WHERE p_before < p_limit * t / 100 AND p_after >= p_limit * t / 100
  ON CONFLICT DO NOTHING;
$$;

-- Moves a task's (or a project adjustment's) money in every budget that counts it, in the period
-- containing its acceptance: held -= p_release, spent += p_charge. The ledger entries of the
-- movement are already written: a row made now from the ledger holds the movement already, so
-- only rows that existed are moved. Call with the project lock held.
DROP FUNCTION spendgate_apply_to_budgets(uuid, "Unit", timestamptz, numeric, numeric);
CREATE FUNCTION spendgate_apply_to_budgets(p_project uuid, p_unit "Unit", p_has_task boolean, p_key uuid, p_user text,
                                           p_tags text[], p_at timestamptz, p_release numeric, p_charge numeric)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  b record;
  w record;
  bp budget_period;
  before numeric;
BEGIN
  FOR b IN SELECT bb.*, spendgate_budget_subject(bb.scope, bb.scope_key_id, bb.scope_value, p_has_task, p_key, p_user, coalesce(p_tags, '{}')) AS subject
           FROM budget bb WHERE bb.project_id = p_project AND bb.unit = p_unit AND bb.deleted_at IS NULL ORDER BY bb.id LOOP
    CONTINUE WHEN b.subject IS NULL;
    SELECT * INTO w FROM spendgate_period_window(b.period, p_at);
    UPDATE budget_period SET held = held - p_release, spent = spent + p_charge
    WHERE budget_id = b.id AND period_start = w.period_start AND subject = b.subject
    RETURNING * INTO bp;
    IF FOUND THEN
      before := bp.spent + bp.held + p_release - p_charge;
    ELSE
      bp := spendgate_budget_period(b.id, p_at, b.subject); -- from the ledger: the movement included
      before := bp.spent + bp.held + p_release - p_charge;
    END IF;
    PERFORM spendgate_record_crossings(b.id, bp.period_start, b.subject, b."limit", b.thresholds, before, bp.spent + bp.held);
  END LOOP;
END $$;

-- Attribution roll-up: one settled task's (or adjustment's) counters into its apiKey and tag rows
-- (per day) and its user row (per month). One statement.
CREATE FUNCTION spendgate_rollup_by_add(p_project uuid, p_model text, p_unit "Unit", p_version int, p_day date,
                                        p_key_prefix text, p_user text, p_tags text[], p_tasks int, p_unpriced int,
                                        p_amount numeric, p_rollup jsonb)
RETURNS void LANGUAGE sql AS $$
  INSERT INTO spend_rollup_by AS s (dimension, period, project_id, value, model, unit, price_book_version, tasks, unpriced_tasks,
                                    amount, input_tokens, output_tokens, cache_read_tokens, cache_write_5m_tokens,
                                    cache_write_1h_tokens, cache_write_tokens, video_seconds, images)
  SELECT d.dimension, d.period, p_project, d.value, p_model, p_unit, p_version, p_tasks, p_unpriced, p_amount,
         coalesce((p_rollup->>'input_tokens')::bigint, 0), coalesce((p_rollup->>'output_tokens')::bigint, 0),
         coalesce((p_rollup->>'cache_read_tokens')::bigint, 0), coalesce((p_rollup->>'cache_write_5m_tokens')::bigint, 0),
         coalesce((p_rollup->>'cache_write_1h_tokens')::bigint, 0), coalesce((p_rollup->>'cache_write_tokens')::bigint, 0),
         coalesce((p_rollup->>'video_seconds')::numeric, 0), coalesce((p_rollup->>'images')::int, 0)
  FROM (SELECT 'apiKey' AS dimension, p_day AS period, coalesce(p_key_prefix, '') AS value
        UNION ALL SELECT 'user', date_trunc('month', p_day)::date, coalesce(p_user, '')
        UNION ALL SELECT 'tag', p_day, t FROM unnest(coalesce(p_tags, '{}')) t) d
  ON CONFLICT (dimension, period, project_id, value, model, unit, price_book_version) DO UPDATE SET
    tasks = s.tasks + EXCLUDED.tasks, unpriced_tasks = s.unpriced_tasks + EXCLUDED.unpriced_tasks,
    amount = s.amount + EXCLUDED.amount, input_tokens = s.input_tokens + EXCLUDED.input_tokens,
    output_tokens = s.output_tokens + EXCLUDED.output_tokens, cache_read_tokens = s.cache_read_tokens + EXCLUDED.cache_read_tokens,
    cache_write_5m_tokens = s.cache_write_5m_tokens + EXCLUDED.cache_write_5m_tokens,
    cache_write_1h_tokens = s.cache_write_1h_tokens + EXCLUDED.cache_write_1h_tokens,
    cache_write_tokens = s.cache_write_tokens + EXCLUDED.cache_write_tokens,
    video_seconds = s.video_seconds + EXCLUDED.video_seconds, images = s.images + EXCLUDED.images;
$$;

-- One settled task's counters into its day's roll-up rows: by outcome (spend_rollup, and by
-- trigger spend_rollup_total) and by who (spend_rollup_by).
CREATE OR REPLACE FUNCTION spendgate_rollup_add(t task, p_status text, p_exactness "Exactness", p_charge numeric, p_rollup jsonb)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_day date := (t.accepted_at AT TIME ZONE 'UTC')::date;
  unpriced int := CASE WHEN p_exactness = 'UNPRICED' THEN 1 ELSE 0 END;
BEGIN
  INSERT INTO spend_rollup AS s (day, project_id, model, unit, status, tasks, unpriced_tasks, amount,
                                 input_tokens, output_tokens, cache_read_tokens, cache_write_5m_tokens,
                                 cache_write_1h_tokens, cache_write_tokens, video_seconds, images)
  VALUES (v_day, t.project_id, t.model, t.unit, p_status, 1, unpriced, p_charge,
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
  PERFORM spendgate_rollup_by_add(t.project_id, t.model, t.unit, t.price_book_version, v_day,
                                  (SELECT k.prefix FROM api_key k WHERE k.id = t.api_key_id), t.end_user, t.tags,
                                  1, unpriced, p_charge, p_rollup);
END $$;

-- Settlement, exactly once (see 20261123190300_hardening_ledger); budgets by the task's attribution.
CREATE OR REPLACE FUNCTION spendgate_settle(p_task bigint, p_status "TaskStatus", p_charge numeric, p_exactness "Exactness",
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
  PERFORM spendgate_apply_to_budgets(t.project_id, t.unit, true, t.api_key_id, t.end_user, t.tags, t.accepted_at, t.hold_amount, p_charge);

  INSERT INTO charge_line (task_id, stage, seq, component, quantity, rate, per, amount)
  SELECT p_task, 'charge', l.ordinality::int, l.value->>'component', (l.value->>'quantity')::numeric,
         (l.value->>'rate')::numeric, (l.value->>'per')::numeric, (l.value->>'amount')::numeric
  FROM jsonb_array_elements(coalesce(p_lines, '[]'::jsonb)) WITH ORDINALITY l;

  PERFORM spendgate_rollup_add(t, p_status::text, p_exactness, p_charge, p_rollup);
  settled := true; overrun := excess;
  RETURN NEXT;
END $$;

-- The vendor refused (see 20261123190300_hardening_ledger); budgets by the task's attribution.
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
  PERFORM spendgate_apply_to_budgets(t.project_id, t.unit, true, t.api_key_id, t.end_user, t.tags, t.accepted_at, t.hold_amount, 0);
  RETURN true;
END $$;

-- A correction: a new signed entry with a mandatory reason, counted in the period of `p_at`, in the
-- budgets that count its task (the project's budgets only, without a task), and in the roll-ups.
CREATE OR REPLACE FUNCTION spendgate_adjust(p_project uuid, p_unit "Unit", p_amount numeric, p_reason text,
                                            p_task bigint, p_at timestamptz)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  entry bigint;
  t task;
  v_day date := (p_at AT TIME ZONE 'UTC')::date;
BEGIN
  IF p_reason IS NULL OR length(trim(p_reason)) = 0 THEN
    RAISE EXCEPTION 'an adjustment needs a reason';
  END IF;
  PERFORM spendgate_lock_project(p_project);
  IF p_task IS NOT NULL THEN SELECT * INTO t FROM task WHERE id = p_task; END IF;
  INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at, reason)
  VALUES (p_project, p_task, 'adjustment', p_unit, p_amount, p_at, p_reason) RETURNING id INTO entry;
  PERFORM spendgate_apply_to_budgets(p_project, p_unit, p_task IS NOT NULL, t.api_key_id, t.end_user, t.tags, p_at, 0, p_amount);
  -- Reports read the roll-ups, so an adjustment lands there too (on its task's model, if any).
  INSERT INTO spend_rollup AS s (day, project_id, model, unit, status, amount)
  VALUES (v_day, p_project, coalesce(t.model, '(adjustment)'), p_unit, 'adjustment', p_amount)
  ON CONFLICT (day, project_id, model, unit, status) DO UPDATE SET amount = s.amount + EXCLUDED.amount;
  PERFORM spendgate_rollup_by_add(p_project, coalesce(t.model, '(adjustment)'), p_unit, coalesce(t.price_book_version, 0), v_day,
                                  (SELECT k.prefix FROM api_key k WHERE k.id = t.api_key_id), t.end_user, t.tags,
                                  0, 0, p_amount, '{}'::jsonb);
  RETURN entry;
END $$;

-- An operator's decision (see 20261123190300_hardening_ledger); budgets by the task's attribution.
CREATE OR REPLACE FUNCTION spendgate_resolve(p_task bigint, p_outcome text, p_amount numeric, p_reason text)
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
    PERFORM spendgate_apply_to_budgets(t.project_id, t.unit, true, t.api_key_id, t.end_user, t.tags, t.accepted_at, t.hold_amount, target);
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

DROP FUNCTION spendgate_place_holds(json);
DROP FUNCTION spendgate_place_holds_in_order(spendgate_hold_request[]);

-- The hold, one request after the other (see 20261122000100_ledger_functions): every budget that
-- counts the request (spendgate_budget_subject), under its subject. Outcomes: held | refused |
-- replay | unknown | conflict | in_progress. A refusal names the budget, its scope and the subject.
CREATE FUNCTION spendgate_place_holds_in_order(p_requests spendgate_hold_request[])
RETURNS TABLE (i int, outcome text, task_id bigint, budget_id uuid, budget_limit numeric,
               budget_remaining numeric, budget_period "Period", budget_hard boolean, response_body text,
               response_status int, budget_scope "BudgetScope", budget_scope_value text, budget_subject text)
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  b record;
  bp budget_period;
  existing record;
  refused record;
  -- A flag, not `refused IS NOT NULL`: a record is NULL-tested field by field, and a project
  -- budget's scope value is null.
  was_refused boolean;
  new_task bigint;
  amount numeric;
  budget_ids uuid[];
  period_starts timestamptz[];
  subjects text[];
  batch_at timestamptz := clock_timestamp();
  at timestamptz;
BEGIN
  FOR r IN SELECT * FROM unnest(p_requests) x ORDER BY x.i
  LOOP
    at := coalesce(r.accepted_at, batch_at);
    i := r.i; task_id := NULL; budget_id := NULL; budget_limit := NULL; budget_remaining := NULL;
    budget_period := NULL; budget_hard := NULL; response_body := NULL; response_status := NULL;
    budget_scope := NULL; budget_scope_value := NULL; budget_subject := NULL;

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
    was_refused := false;
    budget_ids := '{}';
    period_starts := '{}';
    subjects := '{}';
    FOR b IN SELECT bb.*, spendgate_budget_subject(bb.scope, bb.scope_key_id, bb.scope_value, true, r.api_key_id, r.end_user, coalesce(r.tags, '{}')) AS subject
             FROM budget bb WHERE bb.project_id = r.project_id AND bb.unit = r.unit AND bb.deleted_at IS NULL ORDER BY bb.id LOOP
      CONTINUE WHEN b.subject IS NULL;
      SELECT p.* INTO bp FROM budget_period p, spendgate_period_window(b.period, at) w
      WHERE p.budget_id = b.id AND p.period_start = w.period_start AND p.subject = b.subject;
      IF NOT FOUND THEN bp := spendgate_budget_period(b.id, at, b.subject); END IF;
      budget_ids := budget_ids || b.id;
      period_starts := period_starts || bp.period_start;
      subjects := subjects || b.subject;
      IF b.hard AND bp.spent + bp.held + amount > b."limit" THEN
        -- As it is: negative when settled charges ran past the limit (an overrun).
        SELECT b.id AS id, b."limit" AS lim, b."limit" - bp.spent - bp.held AS remaining, b.period AS period,
               b.scope AS scope, coalesce(b.scope_value, (SELECT k.prefix FROM api_key k WHERE k.id = b.scope_key_id)) AS scope_value,
               b.subject AS subject INTO refused;
        was_refused := true;
        EXIT;
      END IF;
    END LOOP;
    IF was_refused THEN
      outcome := 'refused'; budget_id := refused.id; budget_limit := refused.lim;
      budget_remaining := refused.remaining; budget_period := refused.period; budget_hard := true;
      budget_scope := refused.scope; budget_scope_value := refused.scope_value; budget_subject := refused.subject;
      RETURN NEXT; CONTINUE;
    END IF;

    INSERT INTO task (project_id, api_key_id, end_user, tags, model, family, kind, unit, status, price_basis, price_book_version,
                      exactness, estimate_amount, estimate_tier, estimate_warnings, estimate_lines, hold_amount,
                      idempotency_key, request_hash, accepted_at, updated_at)
    VALUES (r.project_id, r.api_key_id, r.end_user, coalesce(r.tags, '{}'), r.model, r.family, r.kind, r.unit, 'submitting', r.price_basis,
            r.price_book_version, r.exactness, r.estimate_amount, r.estimate_tier,
            coalesce(r.estimate_warnings, '{}'), coalesce(r.lines, '{}'), amount, r.idempotency_key, r.request_hash, at, at)
    RETURNING id INTO new_task;

    IF amount > 0 THEN
      INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at)
      VALUES (r.project_id, new_task, 'hold', r.unit, amount, at);
      WITH raised AS (
        UPDATE budget_period p SET held = p.held + amount
        FROM unnest(budget_ids, period_starts, subjects) AS k(bid, ps, subj)
        WHERE p.budget_id = k.bid AND p.period_start = k.ps AND p.subject = k.subj
        RETURNING p.budget_id, p.period_start, p.subject, p.spent + p.held AS after
      )
      INSERT INTO budget_alert (budget_id, period_start, subject, threshold, used_amount)
      SELECT u.budget_id, u.period_start, u.subject, t, u.after
      FROM raised u JOIN budget bb ON bb.id = u.budget_id, unnest(bb.thresholds) t
      WHERE u.after - amount < bb."limit" * t / 100 AND u.after >= bb."limit" * t / 100
      ON CONFLICT DO NOTHING;
    END IF;

    outcome := 'held'; task_id := new_task;
    RETURN NEXT;
  END LOOP;
END $$;

-- The hold for a batch (see 20261122150000_hold_idempotency_fast_path): every budget that counts
-- a request, under its subject, is checked and raised by the batch's total for it.
CREATE FUNCTION spendgate_place_holds(p_requests json)
RETURNS TABLE (i int, outcome text, task_id bigint, budget_id uuid, budget_limit numeric,
               budget_remaining numeric, budget_period "Period", budget_hard boolean, response_body text,
               response_status int, budget_scope "BudgetScope", budget_scope_value text, budget_subject text)
LANGUAGE plpgsql AS $$
DECLARE
  batch_at timestamptz := clock_timestamp();
  reqs spendgate_hold_request[];
  fits boolean;
  s_bid uuid[];
  s_start timestamptz[];
  s_subject text[];
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

  -- Every (budget, period window, subject) the batch touches, with the batch's total for it.
  SELECT array_agg(k.bid), array_agg(k.period_start), array_agg(k.subject), array_agg(k.at), array_agg(k.total)
  INTO s_bid, s_start, s_subject, s_at, s_total
  FROM (SELECT g.bid, w.period_start, g.subject, min(g.at) AS at, sum(g.total) AS total
        FROM (SELECT b.id AS bid, b.period, s.subject, coalesce(x.accepted_at, batch_at) AS at, sum(x.hold_amount) AS total
              FROM unnest(reqs) x
              JOIN budget b ON b.project_id = x.project_id AND b.unit = x.unit AND b.deleted_at IS NULL
              CROSS JOIN LATERAL (SELECT spendgate_budget_subject(b.scope, b.scope_key_id, b.scope_value, true, x.api_key_id,
                                                                 x.end_user, coalesce(x.tags, '{}')) AS subject) s
              WHERE s.subject IS NOT NULL
              GROUP BY b.id, b.period, s.subject, coalesce(x.accepted_at, batch_at)) g
        CROSS JOIN LATERAL spendgate_period_window(g.period, g.at) w
        GROUP BY g.bid, w.period_start, g.subject) k;

  PERFORM spendgate_budget_period(k.bid, k.at, k.subject) FROM unnest(s_bid, s_start, s_subject, s_at) AS k(bid, period_start, subject, at)
  WHERE NOT EXISTS (SELECT 1 FROM budget_period p WHERE p.budget_id = k.bid AND p.period_start = k.period_start AND p.subject = k.subject);

  SELECT coalesce(bool_and(NOT b.hard OR p.spent + p.held + k.total <= b."limit"), true) INTO fits
  FROM unnest(s_bid, s_start, s_subject, s_total) AS k(bid, period_start, subject, total)
  JOIN budget b ON b.id = k.bid
  JOIN budget_period p ON p.budget_id = k.bid AND p.period_start = k.period_start AND p.subject = k.subject;

  IF NOT fits THEN
    RETURN QUERY SELECT * FROM spendgate_place_holds_in_order(reqs);
    RETURN;
  END IF;

  RETURN QUERY
  WITH n AS (SELECT x.*, nextval('task_id_seq'::regclass) AS task_id, coalesce(x.accepted_at, batch_at) AS at FROM unnest(reqs) x),
  t AS (
    INSERT INTO task (id, project_id, api_key_id, end_user, tags, model, family, kind, unit, status, price_basis, price_book_version,
                      exactness, estimate_amount, estimate_tier, estimate_warnings, estimate_lines, hold_amount,
                      idempotency_key, request_hash, accepted_at, updated_at)
    SELECT n.task_id, n.project_id, n.api_key_id, n.end_user, coalesce(n.tags, '{}'), n.model, n.family, n.kind, n.unit, 'submitting',
           n.price_basis, n.price_book_version, n.exactness, n.estimate_amount, n.estimate_tier, coalesce(n.estimate_warnings, '{}'),
           coalesce(n.lines, '{}'), n.hold_amount, n.idempotency_key, n.request_hash, n.at, n.at
    FROM n
  ),
  e AS (
    INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at)
    SELECT n.project_id, n.task_id, 'hold', n.unit, n.hold_amount, n.at FROM n WHERE n.hold_amount > 0
  ),
  raised AS (
    UPDATE budget_period p SET held = p.held + k.total
    FROM unnest(s_bid, s_start, s_subject, s_total) AS k(bid, period_start, subject, total)
    WHERE p.budget_id = k.bid AND p.period_start = k.period_start AND p.subject = k.subject AND k.total > 0
    RETURNING p.budget_id, p.period_start, p.subject, p.spent + p.held AS after, k.total
  ),
  a AS (
    INSERT INTO budget_alert (budget_id, period_start, subject, threshold, used_amount)
    SELECT u.budget_id, u.period_start, u.subject, th, u.after
    FROM raised u JOIN budget b ON b.id = u.budget_id, unnest(b.thresholds) th
    WHERE u.after - u.total < b."limit" * th / 100 AND u.after >= b."limit" * th / 100
    ON CONFLICT DO NOTHING
  )
  SELECT n.i, 'held'::text, n.task_id, NULL::uuid, NULL::numeric, NULL::numeric, NULL::"Period", NULL::boolean, NULL::text, NULL::int,
         NULL::"BudgetScope", NULL::text, NULL::text
  FROM n;
END $$;

-- Spend by who for what was settled before this migration: each settled or resolved task as its
-- settlement rolled it up (its tokens from its charge lines, seconds and images from its quote
-- when the task was charged for them), and each adjustment.
INSERT INTO spend_rollup_by AS s (dimension, period, project_id, value, model, unit, price_book_version, tasks, unpriced_tasks,
                                  amount, input_tokens, output_tokens, cache_read_tokens, cache_write_5m_tokens,
                                  cache_write_1h_tokens, cache_write_tokens, video_seconds, images)
SELECT d.dimension, d.period, x.project_id, d.value, x.model, x.unit, x.price_book_version, sum(x.tasks), sum(x.unpriced), sum(x.amount),
       sum(x.input), sum(x.output), sum(x.cache_read), sum(x.cw5m), sum(x.cw1h), sum(x.cw), sum(x.seconds), sum(x.images)
FROM (
  SELECT t.project_id, t.model, t.unit, t.price_book_version, (t.accepted_at AT TIME ZONE 'UTC')::date AS day,
         k.prefix, t.end_user, coalesce(t.tags, '{}') AS tags, 1 AS tasks,
         CASE WHEN t.charge_exactness = 'UNPRICED' THEN 1 ELSE 0 END AS unpriced, t.charge_amount AS amount,
         coalesce(l.input, 0) AS input, coalesce(l.output, 0) AS output, coalesce(l.cache_read, 0) AS cache_read,
         coalesce(l.cw5m, 0) AS cw5m, coalesce(l.cw1h, 0) AS cw1h, coalesce(l.cw, 0) AS cw,
         CASE WHEN t.kind = 'video' AND charged THEN coalesce((t.price_basis->>'duration')::numeric, 0) ELSE 0 END AS seconds,
         CASE WHEN t.kind = 'image' AND charged THEN coalesce((t.price_basis->>'n')::int, 1) ELSE 0 END AS images
  FROM task t
  LEFT JOIN api_key k ON k.id = t.api_key_id
  CROSS JOIN LATERAL (SELECT t.status = 'ready' OR (t.status = 'failed' AND t.charge_amount <> 0) AS charged) c
  LEFT JOIN LATERAL (
    SELECT sum(cl.quantity) FILTER (WHERE cl.component = 'input')::bigint AS input,
           sum(cl.quantity) FILTER (WHERE cl.component = 'output')::bigint AS output,
           sum(cl.quantity) FILTER (WHERE cl.component = 'cache_read')::bigint AS cache_read,
           sum(cl.quantity) FILTER (WHERE cl.component = 'cache_write_5m')::bigint AS cw5m,
           sum(cl.quantity) FILTER (WHERE cl.component = 'cache_write_1h')::bigint AS cw1h,
           sum(cl.quantity) FILTER (WHERE cl.component = 'cache_write')::bigint AS cw
    FROM charge_line cl WHERE cl.task_id = t.id AND t.charge_exactness = 'EXACT') l ON true
  WHERE t.settled_at IS NOT NULL AND t.status <> 'rejected'
  UNION ALL
  SELECT e.project_id, coalesce(t.model, '(adjustment)'), e.unit, coalesce(t.price_book_version, 0), (e.effective_at AT TIME ZONE 'UTC')::date,
         k.prefix, t.end_user, coalesce(t.tags, '{}'), 0, 0, e.amount, 0, 0, 0, 0, 0, 0, 0, 0
  FROM ledger_entry e LEFT JOIN task t ON t.id = e.task_id LEFT JOIN api_key k ON k.id = t.api_key_id
  WHERE e.kind = 'adjustment'
) x
CROSS JOIN LATERAL (SELECT 'apiKey' AS dimension, x.day AS period, coalesce(x.prefix, '') AS value
                    UNION ALL SELECT 'user', date_trunc('month', x.day)::date, coalesce(x.end_user, '')
                    UNION ALL SELECT 'tag', x.day, tg FROM unnest(x.tags) tg) d
GROUP BY d.dimension, d.period, x.project_id, d.value, x.model, x.unit, x.price_book_version;
