-- Closing a month (decisions §13, issue 31). Every function that writes a ledger entry for a task
-- or an adjustment first takes month_close in ROW SHARE mode, then posts where the books are
-- open: `spendgate_post_at`. A close takes the table in EXCLUSIVE mode, so it waits for every
-- such movement in flight and every later one waits for it, then sees it: a movement lands
-- before the close (in the month) or after it (a prior-period item), never both, never lost.

-- One close in force per month; a reopened close keeps its row, and statements and seals stay
-- as they were written.
CREATE UNIQUE INDEX month_close_active ON month_close (month) WHERE reopened_at IS NULL;
ALTER TABLE month_close ADD CONSTRAINT month_close_first_day CHECK (month = date_trunc('month', month)::date);
ALTER TABLE month_close ADD CONSTRAINT month_close_reopen_has_reason CHECK ((reopened_at IS NULL) = (reopen_reason IS NULL));

CREATE FUNCTION spendgate_kept_as_written() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% rows are kept as written: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'raise_exception';
END $$;
CREATE TRIGGER statement_kept BEFORE UPDATE OR DELETE ON statement FOR EACH ROW EXECUTE FUNCTION spendgate_kept_as_written();
CREATE TRIGGER ledger_seal_kept BEFORE UPDATE OR DELETE ON ledger_seal FOR EACH ROW EXECUTE FUNCTION spendgate_kept_as_written();

-- A close is never deleted or changed; it can only be reopened, once.
CREATE FUNCTION spendgate_month_close_reopen_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' OR OLD.reopened_at IS NOT NULL OR NEW.month <> OLD.month OR NEW.closed_at <> OLD.closed_at
     OR NEW.closed_by <> OLD.closed_by OR NEW.last_entry_id <> OLD.last_entry_id OR NEW.carried_tasks <> OLD.carried_tasks THEN
    RAISE EXCEPTION 'a month''s close is kept as written; it can only be reopened, once' USING ERRCODE = 'raise_exception';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER month_close_reopen_only BEFORE UPDATE OR DELETE ON month_close FOR EACH ROW EXECUTE FUNCTION spendgate_month_close_reopen_only();

-- The closed month an instant belongs to, or NULL when its month is open.
CREATE FUNCTION spendgate_closed_month(p_at timestamptz) RETURNS date
LANGUAGE sql STABLE AS $$
  SELECT c.month FROM month_close c
  WHERE c.month = date_trunc('month', p_at AT TIME ZONE 'UTC')::date AND c.reopened_at IS NULL
$$;

-- Where a movement meant for `p_at` is posted: `p_at` itself while its month is open; else the
-- first instant of the first open month after it. Takes month_close in ROW SHARE mode (held to
-- the end of the transaction): callers take it before any row or project lock, as a close takes
-- EXCLUSIVE first, so the two never wait for each other in a circle.
CREATE FUNCTION spendgate_post_at(p_at timestamptz) RETURNS timestamptz
LANGUAGE plpgsql AS $$
DECLARE
  m date := date_trunc('month', p_at AT TIME ZONE 'UTC')::date;
  moved boolean := false;
BEGIN
  LOCK TABLE month_close IN ROW SHARE MODE;
  WHILE EXISTS (SELECT 1 FROM month_close c WHERE c.month = m AND c.reopened_at IS NULL) LOOP
    m := (m + interval '1 month')::date;
    moved := true;
  END LOOP;
  RETURN CASE WHEN moved THEN m::timestamp AT TIME ZONE 'UTC' ELSE p_at END;
END $$;

-- Where a task's open hold lives: its acceptance, or the start of the month a close carried it
-- into (the latest hold entry). Its release and charge are posted there, or later if closed.
CREATE FUNCTION spendgate_task_post_at(t task) RETURNS timestamptz
LANGUAGE sql AS $$
  SELECT spendgate_post_at(coalesce((SELECT max(e.effective_at) FROM ledger_entry e WHERE e.task_id = t.id AND e.kind = 'hold'), t.accepted_at))
$$;

-- A task may now have a second hold and release: the ones a close carried into the next month.
-- Still at most one of each per task and month.
DROP INDEX ledger_entry_task_kind_once;
CREATE UNIQUE INDEX ledger_entry_task_kind_once ON ledger_entry (task_id, kind, date_trunc('month', effective_at AT TIME ZONE 'UTC'))
  WHERE task_id IS NOT NULL AND kind IN ('hold', 'release', 'charge');

-- The last line of defence, whatever path writes: no entry inside a closed month. Only entries
-- dated before the current month reach the function (the WHEN costs the submission path nothing).
CREATE FUNCTION spendgate_ledger_open_month() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  LOCK TABLE month_close IN ROW SHARE MODE;
  IF spendgate_closed_month(NEW.effective_at) IS NOT NULL THEN
    RAISE EXCEPTION 'the month % is closed: no ledger entry may be written in it (post it in the first open month)',
      to_char(NEW.effective_at AT TIME ZONE 'UTC', 'YYYY-MM') USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER ledger_entry_open_month BEFORE INSERT ON ledger_entry FOR EACH ROW
  WHEN (NEW.effective_at < (date_trunc('month', statement_timestamp() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'))
  EXECUTE FUNCTION spendgate_ledger_open_month();

-- Roll-ups at the posting day: a movement of a task accepted in another month (a closed one) is
-- counted as a prior-period item of the month it is posted in.
DROP FUNCTION spendgate_rollup_add(task, text, "Exactness", numeric, jsonb);
CREATE FUNCTION spendgate_rollup_add(t task, p_status text, p_exactness "Exactness", p_charge numeric, p_rollup jsonb, p_at timestamptz)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_day date := (p_at AT TIME ZONE 'UTC')::date;
  unpriced int := CASE WHEN p_exactness = 'UNPRICED' THEN 1 ELSE 0 END;
  v_status text := CASE WHEN date_trunc('month', p_at AT TIME ZONE 'UTC') <> date_trunc('month', t.accepted_at AT TIME ZONE 'UTC')
                        THEN 'prior_period' ELSE p_status END;
BEGIN
  INSERT INTO spend_rollup AS s (day, project_id, model, unit, status, tasks, unpriced_tasks, amount,
                                 input_tokens, output_tokens, cache_read_tokens, cache_write_5m_tokens,
                                 cache_write_1h_tokens, cache_write_tokens, video_seconds, images)
  VALUES (v_day, t.project_id, t.model, t.unit, v_status, 1, unpriced, p_charge,
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
END $function$;

CREATE OR REPLACE FUNCTION public.spendgate_settle(p_task bigint, p_status "TaskStatus", p_charge numeric, p_exactness "Exactness", p_tier text, p_warnings text[], p_needs_review boolean, p_review_reason text, p_usage jsonb, p_lines jsonb, p_rollup jsonb)
 RETURNS TABLE(settled boolean, overrun numeric)
 LANGUAGE plpgsql
AS $function$
DECLARE
  t task;
  excess numeric;
  warning text;
  post timestamptz;
  belongs date;
BEGIN
  LOCK TABLE month_close IN ROW SHARE MODE; -- before the row lock: see spendgate_post_at
  SELECT * INTO t FROM task WHERE id = p_task FOR UPDATE;
  IF NOT FOUND OR t.settled_at IS NOT NULL OR t.status IN ('ready', 'failed', 'rejected') THEN
    settled := false; overrun := NULL; RETURN NEXT; RETURN;
  END IF;
  PERFORM spendgate_lock_project(t.project_id);
  post := spendgate_task_post_at(t);
  belongs := spendgate_closed_month(t.accepted_at);

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
    INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at, belongs_to)
    VALUES (t.project_id, t.id, 'release', t.unit, t.hold_amount, post, belongs);
  END IF;
  IF p_charge <> 0 THEN
    INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at, belongs_to)
    VALUES (t.project_id, t.id, 'charge', t.unit, p_charge, post, belongs);
  END IF;
  PERFORM spendgate_apply_to_budgets(t.project_id, t.unit, true, t.api_key_id, t.end_user, t.tags, post, t.hold_amount, p_charge);

  INSERT INTO charge_line (task_id, stage, seq, component, quantity, rate, per, amount)
  SELECT p_task, 'charge', l.ordinality::int, l.value->>'component', (l.value->>'quantity')::numeric,
         (l.value->>'rate')::numeric, (l.value->>'per')::numeric, (l.value->>'amount')::numeric
  FROM jsonb_array_elements(coalesce(p_lines, '[]'::jsonb)) WITH ORDINALITY l;

  PERFORM spendgate_rollup_add(t, p_status::text, p_exactness, p_charge, p_rollup, post);
  settled := true; overrun := excess;
  RETURN NEXT;
END $function$;

CREATE OR REPLACE FUNCTION public.spendgate_reject(p_task bigint, p_reason text)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
DECLARE
  t task;
  post timestamptz;
BEGIN
  LOCK TABLE month_close IN ROW SHARE MODE;
  SELECT * INTO t FROM task WHERE id = p_task FOR UPDATE;
  IF NOT FOUND OR t.status NOT IN ('submitting', 'unknown') OR t.settled_at IS NOT NULL THEN
    RETURN false;
  END IF;
  PERFORM spendgate_lock_project(t.project_id);
  post := spendgate_task_post_at(t);
  UPDATE task SET status = 'rejected', settled_at = clock_timestamp(), updated_at = clock_timestamp(),
                  charge_amount = 0, review_reason = p_reason, needs_review = false, idempotency_key = NULL
  WHERE id = p_task;
  IF t.hold_amount > 0 THEN
    INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at, reason, belongs_to)
    VALUES (t.project_id, t.id, 'release', t.unit, t.hold_amount, post, p_reason, spendgate_closed_month(t.accepted_at));
  END IF;
  PERFORM spendgate_apply_to_budgets(t.project_id, t.unit, true, t.api_key_id, t.end_user, t.tags, post, t.hold_amount, 0);
  RETURN true;
END $function$;

CREATE OR REPLACE FUNCTION public.spendgate_adjust(p_project uuid, p_unit "Unit", p_amount numeric, p_reason text, p_task bigint, p_at timestamp with time zone)
 RETURNS bigint
 LANGUAGE plpgsql
AS $function$
DECLARE
  entry bigint;
  t task;
  post timestamptz;
  belongs date;
  v_day date;
BEGIN
  IF p_reason IS NULL OR length(trim(p_reason)) = 0 THEN
    RAISE EXCEPTION 'an adjustment needs a reason';
  END IF;
  LOCK TABLE month_close IN ROW SHARE MODE;
  PERFORM spendgate_lock_project(p_project);
  -- An adjustment meant for a closed month is a prior-period item of the first open one.
  post := spendgate_post_at(p_at);
  belongs := spendgate_closed_month(p_at);
  v_day := (post AT TIME ZONE 'UTC')::date;
  IF p_task IS NOT NULL THEN SELECT * INTO t FROM task WHERE id = p_task; END IF;
  INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at, reason, belongs_to)
  VALUES (p_project, p_task, 'adjustment', p_unit, p_amount, post, p_reason, belongs) RETURNING id INTO entry;
  PERFORM spendgate_apply_to_budgets(p_project, p_unit, p_task IS NOT NULL, t.api_key_id, t.end_user, t.tags, post, 0, p_amount);
  -- Reports read the roll-ups, so an adjustment lands there too (on its task's model, if any).
  INSERT INTO spend_rollup AS s (day, project_id, model, unit, status, amount)
  VALUES (v_day, p_project, coalesce(t.model, '(adjustment)'), p_unit, CASE WHEN belongs IS NULL THEN 'adjustment' ELSE 'prior_period' END, p_amount)
  ON CONFLICT (day, project_id, model, unit, status) DO UPDATE SET amount = s.amount + EXCLUDED.amount;
  PERFORM spendgate_rollup_by_add(p_project, coalesce(t.model, '(adjustment)'), p_unit, coalesce(t.price_book_version, 0), v_day,
                                  (SELECT k.prefix FROM api_key k WHERE k.id = t.api_key_id), t.end_user, t.tags,
                                  0, 0, p_amount, '{}'::jsonb);
  RETURN entry;
END $function$;

CREATE OR REPLACE FUNCTION public.spendgate_resolve(p_task bigint, p_outcome text, p_amount numeric, p_reason text)
 RETURNS numeric
 LANGUAGE plpgsql
AS $function$
DECLARE
  t task;
  target numeric;
  delta numeric;
  post timestamptz;
  belongs date;
BEGIN
  IF p_reason IS NULL OR length(trim(p_reason)) = 0 THEN
    RAISE EXCEPTION 'a resolution needs a reason' USING ERRCODE = 'check_violation';
  END IF;
  LOCK TABLE month_close IN ROW SHARE MODE;
  SELECT * INTO t FROM task WHERE id = p_task FOR UPDATE;
  IF NOT FOUND THEN RAISE EXCEPTION 'task % not found', p_task USING ERRCODE = 'no_data_found'; END IF;
  IF t.resolved_at IS NOT NULL THEN
    RAISE EXCEPTION 'task % was already resolved (%)', p_task, t.resolution USING ERRCODE = 'unique_violation';
  END IF;
  IF NOT t.needs_review THEN
    RAISE EXCEPTION 'task % is not under review', p_task USING ERRCODE = 'check_violation';
  END IF;
  -- CHARGE without an amount: what the task stands at. Settled, its charge as settled (an overrun
  -- is the vendor's usage: accepting it changes nothing); not settled, its hold.
  target := CASE p_outcome WHEN 'CHARGE' THEN coalesce(p_amount, CASE WHEN t.settled_at IS NOT NULL THEN t.charge_amount ELSE t.hold_amount END) ELSE 0 END;
  IF target < 0 THEN RAISE EXCEPTION 'a charge cannot be negative' USING ERRCODE = 'check_violation'; END IF;
  PERFORM spendgate_lock_project(t.project_id);

  IF t.settled_at IS NULL THEN
    post := spendgate_task_post_at(t);
    belongs := spendgate_closed_month(t.accepted_at);
    IF t.hold_amount > 0 THEN
      INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at, reason, belongs_to)
      VALUES (t.project_id, t.id, 'release', t.unit, t.hold_amount, post, 'resolved: ' || p_reason, belongs);
    END IF;
    IF target <> 0 THEN
      INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at, reason, belongs_to)
      VALUES (t.project_id, t.id, 'charge', t.unit, target, post, 'resolved: ' || p_reason, belongs);
    END IF;
    PERFORM spendgate_apply_to_budgets(t.project_id, t.unit, true, t.api_key_id, t.end_user, t.tags, post, t.hold_amount, target);
    PERFORM spendgate_rollup_add(t, 'resolved', t.exactness, target, '{}'::jsonb, post);
    -- A task still in flight at the vendor (flagged for its age) stops being polled; its outcome
    -- is what the operator decided: unknown to the vendor's side of the books.
    UPDATE task SET settled_at = clock_timestamp(), updated_at = clock_timestamp(), charge_amount = target,
                    charge_exactness = t.exactness, next_poll_at = NULL,
                    status = CASE WHEN t.status IN ('submitting', 'processing') THEN 'unknown'::"TaskStatus" ELSE t.status END
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
END $function$;

-- At close, every hold still open in the month (a task not settled whose latest hold is in it)
-- moves to the first instant of the next month: a release in the month, a hold in the next, both
-- in every budget's balances. The month then holds only what was settled in it; the statement
-- lists what was carried as open items (an accrual). Called by the close, under its lock.
CREATE FUNCTION spendgate_carry_open_holds(p_month date)
 RETURNS TABLE(task_id bigint, model text, unit "Unit", amount numeric, accepted_at timestamptz, project_id uuid)
 LANGUAGE plpgsql
AS $function$
DECLARE
  m_start timestamptz := p_month::timestamp AT TIME ZONE 'UTC';
  m_end timestamptz := (p_month + interval '1 month')::timestamp AT TIME ZONE 'UTC';
  label text := to_char(p_month, 'YYYY-MM');
  r record;
BEGIN
  FOR r IN
    SELECT t.*, h.at AS held_at, h.amount AS held
    FROM (SELECT e.task_id AS id, max(e.effective_at) AS at FROM ledger_entry e
          WHERE e.kind = 'hold' AND e.effective_at >= m_start AND e.effective_at < m_end AND e.task_id IS NOT NULL
          GROUP BY e.task_id) o
    JOIN task t ON t.id = o.id
    CROSS JOIN LATERAL (SELECT e.effective_at AS at, e.amount FROM ledger_entry e WHERE e.task_id = t.id AND e.kind = 'hold' AND e.effective_at = o.at) h
    WHERE t.settled_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM ledger_entry l WHERE l.task_id = t.id AND l.kind = 'hold' AND l.effective_at >= m_end)
    ORDER BY t.project_id, t.id
  LOOP
    PERFORM spendgate_lock_project(r.project_id);
    INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at, reason)
    VALUES (r.project_id, r.id, 'release', r.unit, r.held, r.held_at, 'open at the close of ' || label || ': carried to the next month');
    PERFORM spendgate_apply_to_budgets(r.project_id, r.unit, true, r.api_key_id, r.end_user, r.tags, r.held_at, r.held, 0);
    INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at, reason)
    VALUES (r.project_id, r.id, 'hold', r.unit, r.held, m_end, 'carried from ' || label || ', open at its close');
    PERFORM spendgate_apply_to_budgets(r.project_id, r.unit, true, r.api_key_id, r.end_user, r.tags, m_end, -r.held, 0);
    task_id := r.id; model := r.model; unit := r.unit; amount := r.held; accepted_at := r.accepted_at; project_id := r.project_id;
    RETURN NEXT;
  END LOOP;
END $function$;
