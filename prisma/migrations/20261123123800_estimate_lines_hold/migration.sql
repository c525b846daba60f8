-- Hand-written. The estimate's lines move onto their task (task.estimate_lines, added by the
-- previous migration); charge_line keeps the charge's lines only.
--
-- Why: the hold wrote two or three charge_line rows per submission, each a heap row, a primary-key
-- entry and a foreign-key check against its task; perf put those checks at a quarter of the
-- hold's PostgreSQL time. Measured in one bench:gateway run (64 connections, chat), the hold
-- without the line rows against with them, twice alternated: PostgreSQL CPU per submission
-- 0.153 vs 0.175 ms and 0.126 vs 0.152 ms, 3,817 vs 3,556 and 4,796 vs 4,274 submissions/s.
-- An estimate's lines are written once with the task and never change, so nothing is lost by
-- keeping them in it; they stay NUMERIC (spendgate_line), and the view task_line shows estimate
-- and charge lines together as charge_line did.
--
-- Both hold functions are restated whole (PostgreSQL replaces a function body as a unit); apart
-- from where the lines are written they are the ones from 20261122000100_ledger_functions and
-- 20261122150000_hold_idempotency_fast_path.

-- Lines already written move onto their tasks, in their order. On a large task table this
-- rewrites every task row in the migration's one transaction (writes to task wait for it): apply it
-- in a quiet window. Done in one transaction so that no reader ever sees a task without its lines.
UPDATE task t SET estimate_lines = l.lines
FROM (SELECT task_id, array_agg(ROW(component, quantity, rate, per, amount)::spendgate_line ORDER BY seq) AS lines
      FROM charge_line WHERE stage = 'estimate' GROUP BY task_id) l
WHERE t.id = l.task_id;
DELETE FROM charge_line WHERE stage = 'estimate';
ALTER TABLE charge_line ADD CONSTRAINT charge_line_charge_only CHECK (stage = 'charge');

-- Every line of every task, estimate and charge, as charge_line held them before this migration.
CREATE VIEW task_line AS
  SELECT t.id AS task_id, 'estimate'::text AS stage, l.seq::int AS seq, l.component, l.quantity, l.rate, l.per, l.amount
  FROM task t CROSS JOIN LATERAL unnest(t.estimate_lines) WITH ORDINALITY AS l(component, quantity, rate, per, amount, seq)
  UNION ALL
  SELECT c.task_id, c.stage, c.seq, c.component, c.quantity, c.rate, c.per, c.amount FROM charge_line c;

-- The gateway's JSON lines are read straight into NUMERIC lines by json_populate_recordset (a
-- figure that is not a number is refused there, as the casts into charge_line refused it).
ALTER TYPE spendgate_hold_request ALTER ATTRIBUTE lines TYPE spendgate_line[];

CREATE OR REPLACE FUNCTION spendgate_place_holds_in_order(p_requests spendgate_hold_request[])
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
                      exactness, estimate_amount, estimate_tier, estimate_warnings, estimate_lines, hold_amount,
                      idempotency_key, request_hash, accepted_at, updated_at)
    VALUES (r.project_id, r.api_key_id, r.model, r.family, r.kind, r.unit, 'submitting', r.price_basis,
            r.price_book_version, r.exactness, r.estimate_amount, r.estimate_tier,
            coalesce(r.estimate_warnings, '{}'), coalesce(r.lines, '{}'), amount, r.idempotency_key, r.request_hash, at, at)
    RETURNING id INTO new_task;

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

  -- One statement writes the batch: tasks (with their estimate lines), holds, budget periods and
  -- alerts (fewer statements, each with its own executor start-up, was the larger part of a small
  -- batch's cost). `n` is evaluated once (a CTE with a volatile function): one id per request.
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
  SELECT n.i, 'held'::text, n.task_id, NULL::uuid, NULL::numeric, NULL::numeric, NULL::"Period", NULL::boolean, NULL::text
  FROM n;
END $$;
