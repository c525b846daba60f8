-- Money defects at the edges (issue 36).
--
-- 1. Every ledger entry's effective time lies within the ledger's epoch: from 1970-01-01 (where a
--    LIFETIME budget's window and reconcile start) to before the year 10000 (where that window
--    ends). The API refuses such dates with a 400 first; this makes "the windows and the balances
--    agree" true by construction.
ALTER TABLE ledger_entry ADD CONSTRAINT ledger_entry_effective_in_epoch
  CHECK (effective_at >= timestamptz '1970-01-01 00:00:00+00' AND effective_at < timestamptz '10000-01-01 00:00:00+00');

-- 2. The poller's shared pace has one row.
ALTER TABLE poll_pace ADD CONSTRAINT poll_pace_one_row CHECK (id = 1);
INSERT INTO poll_pace (id) VALUES (1) ON CONFLICT DO NOTHING;

-- 3. Holds of tasks under review, for budgetStatus.heldUnderReview: few rows (only flagged,
--    unsettled tasks enter it), so it costs the hot path nothing but a predicate.
CREATE INDEX task_under_review ON task (project_id, accepted_at) WHERE needs_review AND settled_at IS NULL;

-- 4. spendgate_place_holds: the version in force is the database's (see the comment inside).
CREATE OR REPLACE FUNCTION public.spendgate_place_holds(p_requests json)
 RETURNS TABLE(i integer, outcome text, task_id bigint, budget_id uuid, budget_limit numeric, budget_remaining numeric, budget_period "Period", budget_hard boolean, response_body text, response_status integer, budget_scope "BudgetScope", budget_scope_value text, budget_subject text)
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
  batch_at timestamptz;
  in_force integer;
  reqs spendgate_hold_request[];
  s_bid uuid[];
  s_start timestamptz[];
  s_subject text[];
  s_at timestamptz[];
  s_total numeric[];
  s_hard boolean[];
  s_limit numeric[];
  s_alert_from numeric[];
  r_alert_from numeric[];
  r_bid uuid[];
  r_start timestamptz[];
  r_subject text[];
  r_after numeric[];
  r_total numeric[];
  t_i int[];
  t_id bigint[];
  alert_due boolean;
  attempt int := 0;
BEGIN
  -- The price book as the database has it (issue 36): a publication takes this table in EXCLUSIVE
  -- mode, so this lock waits for one in progress, and the acceptance time is read after it. A
  -- request quoted with any version other than the one in force at that time is not held: its
  -- gateway loads the versions and quotes it again. So no instance accepts a task under a
  -- superseded version, whatever its cache knew.
  LOCK TABLE price_book_version IN ROW SHARE MODE;
  batch_at := clock_timestamp();
  in_force := (SELECT v.version FROM price_book_version v WHERE v.effective_at <= batch_at ORDER BY v.version DESC LIMIT 1);
  reqs := ARRAY(SELECT r FROM json_populate_recordset(NULL::spendgate_hold_request, p_requests) r ORDER BY r.i);
  -- Requests that carry their own acceptance time (recorded earlier, tests) keep their version; a
  -- database without any version yet (before the first start seeded it) has nothing to compare.
  IF in_force IS NOT NULL AND EXISTS (SELECT 1 FROM unnest(reqs) x WHERE x.accepted_at IS NULL AND x.price_book_version IS DISTINCT FROM in_force) THEN
    RETURN QUERY SELECT x.i, 'stale_price'::text, NULL::bigint, NULL::uuid, NULL::numeric, NULL::numeric, NULL::"Period", NULL::boolean,
                        NULL::text, in_force, NULL::"BudgetScope", NULL::text, NULL::text
                 FROM unnest(reqs) x WHERE x.accepted_at IS NULL AND x.price_book_version IS DISTINCT FROM in_force;
    reqs := ARRAY(SELECT x FROM unnest(reqs) x WHERE NOT (x.accepted_at IS NULL AND x.price_book_version IS DISTINCT FROM in_force) ORDER BY x.i);
    IF cardinality(reqs) = 0 THEN RETURN; END IF;
  END IF;

  -- A batch with Idempotency-Keys takes the lock first: its keys are checked and its rows
  -- written under it, so a concurrent batch with the same key waits and then sees it.
  IF EXISTS (SELECT 1 FROM unnest(reqs) x WHERE x.idempotency_key IS NOT NULL) THEN
    PERFORM spendgate_lock_project(p) FROM (SELECT DISTINCT x.project_id AS p FROM unnest(reqs) x) q
    ORDER BY hashtextextended(p::text, 7);
    IF spendgate_idempotency_keys_seen(reqs)
       OR EXISTS (SELECT 1 FROM unnest(reqs) x WHERE x.idempotency_key IS NOT NULL
                  GROUP BY x.project_id, x.idempotency_key HAVING count(*) > 1) THEN
      RETURN QUERY SELECT * FROM spendgate_place_holds_in_order(reqs);
      RETURN;
    END IF;
  END IF;

  LOOP
    attempt := attempt + 1;
    BEGIN
      -- The batch's tasks and hold entries, before the lock (on the second attempt the lock is
      -- already held). SG001 below undoes them with everything else the block did.
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
      )
      SELECT array_agg(n.i), array_agg(n.task_id) INTO t_i, t_id FROM n;

      PERFORM spendgate_lock_project(p) FROM (SELECT DISTINCT x.project_id AS p FROM unnest(reqs) x) q
      ORDER BY hashtextextended(p::text, 7);

      -- Every (budget, period window, subject) the batch touches, with the batch's total for it. A
      -- budget's window is computed once for the batch's own time; only requests that carry their
      -- own acceptance time (recorded earlier) compute theirs.
      SELECT array_agg(k.bid), array_agg(k.period_start), array_agg(k.subject), array_agg(k.at), array_agg(k.total),
             array_agg(k.hard), array_agg(k."limit"), array_agg(k.alert_from)
      INTO s_bid, s_start, s_subject, s_at, s_total, s_hard, s_limit, s_alert_from
      FROM (SELECT b.id AS bid, CASE WHEN x.accepted_at IS NULL THEN b.batch_start ELSE spendgate_period_start(b.period, x.accepted_at) END AS period_start,
                   s.subject, min(coalesce(x.accepted_at, batch_at)) AS at, sum(x.hold_amount) AS total, b.hard, b."limit", b.alert_from
            FROM (SELECT bb.id, bb.project_id, bb.unit, bb.period, bb.hard, bb."limit", bb.scope, bb.scope_key_id, bb.scope_value,
                         spendgate_period_start(bb.period, batch_at) AS batch_start,
                         -- the use from which a hold can cross a threshold: below it, no alert to look for
                         bb."limit" * (SELECT min(th) FROM unnest(bb.thresholds) th) / 100 AS alert_from
                  FROM budget bb WHERE bb.project_id = ANY (ARRAY(SELECT DISTINCT x.project_id FROM unnest(reqs) x)) AND bb.deleted_at IS NULL
                  OFFSET 0) b -- a fence: each budget's figures once, not once per request
            JOIN (SELECT x.project_id, x.unit, x.api_key_id, x.end_user, x.tags, x.accepted_at, x.hold_amount FROM unnest(reqs) x) x
              ON x.project_id = b.project_id AND x.unit = b.unit
            CROSS JOIN LATERAL (SELECT spendgate_budget_subject(b.scope, b.scope_key_id, b.scope_value, true, x.api_key_id,
                                                               x.end_user, coalesce(x.tags, '{}')) AS subject) s
            WHERE s.subject IS NOT NULL
            GROUP BY 1, 2, 3, b.hard, b."limit", b.alert_from) k;

      -- Every balance raised by the batch's total in one statement, each only where a hard limit
      -- still fits: if all of them were raised the batch is in (the lock keeps this true until
      -- commit).
      WITH raised AS (
        UPDATE budget_period p SET held = p.held + k.total
        FROM unnest(s_bid, s_start, s_subject, s_total, s_hard, s_limit, s_alert_from) AS k(bid, period_start, subject, total, hard, lim, alert_from)
        WHERE p.budget_id = k.bid AND p.period_start = k.period_start AND p.subject = k.subject
          AND (NOT k.hard OR p.spent + p.held + k.total <= k.lim)
        RETURNING p.budget_id, p.period_start, p.subject, p.spent + p.held AS after, k.total, k.alert_from
      )
      SELECT array_agg(u.budget_id), array_agg(u.period_start), array_agg(u.subject), array_agg(u.after), array_agg(u.total), array_agg(u.alert_from),
             coalesce(bool_or(u.total > 0 AND u.after >= u.alert_from), false)
      INTO r_bid, r_start, r_subject, r_after, r_total, r_alert_from, alert_due FROM raised u;

      IF coalesce(cardinality(r_bid), 0) <> coalesce(cardinality(s_bid), 0) THEN
        -- Each end user's first balance of an EACH_USER budget, already raised by the batch's
        -- total where it fits: their tasks' ledger entries as spendgate_budget_balance computes
        -- them, without this batch's own (a new user has none).
        WITH made AS (
          INSERT INTO budget_period (budget_id, period_start, subject, period_end, spent, held)
          SELECT m.bid, m.period_start, m.subject, m.period_end, m.spent, m.held + m.total
          FROM (SELECT k.bid, k.period_start, k.subject, w.period_end, k.total, k.hard, k.lim,
                       coalesce(sum(e.amount) FILTER (WHERE e.kind IN ('charge', 'adjustment')), 0) AS spent,
                       coalesce(sum(e.amount) FILTER (WHERE e.kind = 'hold'), 0) - coalesce(sum(e.amount) FILTER (WHERE e.kind = 'release'), 0) AS held
                FROM (SELECT * FROM unnest(s_bid, s_start, s_subject, s_at, s_total, s_hard, s_limit) AS k(bid, period_start, subject, at, total, hard, lim)
                      WHERE NOT EXISTS (SELECT 1 FROM budget_period p WHERE p.budget_id = k.bid AND p.period_start = k.period_start AND p.subject = k.subject)
                      OFFSET 0) k -- the missing ones first: only they are looked up in the ledger
                JOIN budget b ON b.id = k.bid AND b.scope = 'EACH_USER'
                CROSS JOIN LATERAL spendgate_period_window(b.period, k.at) w
                LEFT JOIN task t ON t.project_id = b.project_id AND t.end_user = k.subject AND t.id <> ALL (t_id)
                LEFT JOIN ledger_entry e ON e.task_id = t.id AND e.unit = b.unit AND e.effective_at >= w.period_start AND e.effective_at < w.period_end
                GROUP BY k.bid, k.period_start, k.subject, w.period_end, k.total, k.hard, k.lim) m
          WHERE NOT m.hard OR m.spent + m.held + m.total <= m.lim
          RETURNING budget_period.budget_id, budget_period.period_start, budget_period.subject, budget_period.spent + budget_period.held AS after
        )
        SELECT r_bid || array_agg(u.budget_id), r_start || array_agg(u.period_start), r_subject || array_agg(u.subject),
               r_after || array_agg(u.after), r_total || array_agg(k.total), r_alert_from || array_agg(k.alert_from),
               alert_due OR coalesce(bool_or(k.total > 0 AND u.after >= k.alert_from), false)
        INTO r_bid, r_start, r_subject, r_after, r_total, r_alert_from, alert_due
        FROM made u
        JOIN unnest(s_bid, s_start, s_subject, s_total, s_alert_from) AS k(bid, period_start, subject, total, alert_from)
          ON k.bid = u.budget_id AND k.period_start = u.period_start AND k.subject = u.subject;
        IF coalesce(cardinality(r_bid), 0) <> coalesce(cardinality(s_bid), 0) THEN
          RAISE EXCEPTION USING ERRCODE = 'SG001'; -- a new period, or a hard limit that does not fit
        END IF;
      END IF;

      -- Thresholds crossed, looked for only where a balance reached its budget's lowest one.
      IF alert_due THEN
        INSERT INTO budget_alert (budget_id, period_start, subject, threshold, used_amount)
        SELECT u.bid, u.period_start, u.subject, th, u.after
        FROM unnest(r_bid, r_start, r_subject, r_after, r_total, r_alert_from) AS u(bid, period_start, subject, after, total, alert_from)
        JOIN budget b ON b.id = u.bid, unnest(b.thresholds) th
        WHERE u.total > 0 AND u.after >= u.alert_from AND u.after - u.total < b."limit" * th / 100 AND u.after >= b."limit" * th / 100
        ON CONFLICT DO NOTHING;
      END IF;

      RETURN QUERY
      SELECT u.i, 'held'::text, u.id, NULL::uuid, NULL::numeric, NULL::numeric, NULL::"Period", NULL::boolean, NULL::text, NULL::int,
             NULL::"BudgetScope", NULL::text, NULL::text
      FROM unnest(t_i, t_id) AS u(i, id);
      RETURN;
    EXCEPTION WHEN SQLSTATE 'SG001' THEN
      NULL; -- everything the block wrote is undone, its lock too
    END;
    EXIT WHEN attempt > 1;

    -- Under the lock until commit: any missing balance of a budget other than EACH_USER (a new
    -- period), then the batch once more as a whole (new end users' balances are made in it).
    PERFORM spendgate_lock_project(p) FROM (SELECT DISTINCT x.project_id AS p FROM unnest(reqs) x) q
    ORDER BY hashtextextended(p::text, 7);
    PERFORM spendgate_budget_period(k.bid, k.at, k.subject)
    FROM unnest(s_bid, s_start, s_subject, s_at) AS k(bid, period_start, subject, at)
    JOIN budget b ON b.id = k.bid AND b.scope <> 'EACH_USER'
    WHERE NOT EXISTS (SELECT 1 FROM budget_period p WHERE p.budget_id = k.bid AND p.period_start = k.period_start AND p.subject = k.subject);
    -- None missing: a hard limit did not fit (or another batch made the rows meanwhile, once a period).
    EXIT WHEN NOT FOUND;
  END LOOP;

  -- A hard limit does not fit the batch as a whole: one request at a time, in order.
  RETURN QUERY SELECT * FROM spendgate_place_holds_in_order(reqs);
END $function$;

-- 5. One request at a time: a balance not written yet is read from the ledger and written only
--    for an admitted request, so a refused request leaves no row (no end user appears for it).
CREATE OR REPLACE FUNCTION public.spendgate_place_holds_in_order(p_requests spendgate_hold_request[])
 RETURNS TABLE(i integer, outcome text, task_id bigint, budget_id uuid, budget_limit numeric, budget_remaining numeric, budget_period "Period", budget_hard boolean, response_body text, response_status integer, budget_scope "BudgetScope", budget_scope_value text, budget_subject text)
 LANGUAGE plpgsql
AS $function$
DECLARE
  r record;
  b record;
  w record;
  v_spent numeric;
  v_held numeric;
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
  -- balances this request would start (not written unless it is admitted: a refusal writes nothing)
  m_bid uuid[];
  m_subject text[];
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
    m_bid := '{}';
    m_subject := '{}';
    FOR b IN SELECT bb.*, spendgate_budget_subject(bb.scope, bb.scope_key_id, bb.scope_value, true, r.api_key_id, r.end_user, coalesce(r.tags, '{}')) AS subject
             FROM budget bb WHERE bb.project_id = r.project_id AND bb.unit = r.unit AND bb.deleted_at IS NULL ORDER BY bb.id LOOP
      CONTINUE WHEN b.subject IS NULL;
      SELECT * INTO w FROM spendgate_period_window(b.period, at);
      SELECT p.spent, p.held INTO v_spent, v_held FROM budget_period p
      WHERE p.budget_id = b.id AND p.period_start = w.period_start AND p.subject = b.subject;
      IF NOT FOUND THEN
        -- What its row would start from; made below only if the request is admitted.
        SELECT l.spent, l.held INTO v_spent, v_held FROM spendgate_budget_balance(b.id, b.subject, w.period_start, w.period_end) l;
        m_bid := m_bid || b.id;
        m_subject := m_subject || b.subject;
      END IF;
      budget_ids := budget_ids || b.id;
      period_starts := period_starts || w.period_start;
      subjects := subjects || b.subject;
      IF b.hard AND v_spent + v_held + amount > b."limit" THEN
        -- As it is: negative when settled charges ran past the limit (an overrun).
        SELECT b.id AS id, b."limit" AS lim, b."limit" - v_spent - v_held AS remaining, b.period AS period,
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

    -- Admitted: its new balances first, from the ledger before this task's hold is in it.
    PERFORM spendgate_budget_period(k.bid, at, k.subject) FROM unnest(m_bid, m_subject) AS k(bid, subject);

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
END $function$;

-- 6. Resolution: CHARGE without an amount accepts the settled charge (it refunded an overrun down
--    to the hold before); a task still in flight may be resolved once flagged for its age.
CREATE OR REPLACE FUNCTION public.spendgate_resolve(p_task bigint, p_outcome text, p_amount numeric, p_reason text)
 RETURNS numeric
 LANGUAGE plpgsql
AS $function$
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
  -- CHARGE without an amount: what the task stands at. Settled, its charge as settled (an overrun
  -- is the vendor's usage: accepting it changes nothing); not settled, its hold.
  target := CASE p_outcome WHEN 'CHARGE' THEN coalesce(p_amount, CASE WHEN t.settled_at IS NOT NULL THEN t.charge_amount ELSE t.hold_amount END) ELSE 0 END;
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

-- 7. The poller's claim, paced over every instance (POLL_MAX_PER_SECOND) and fair between them:
--    it reserves the next free slots of the shared pace (at most one second ahead, at most its
--    share: the rate over the instances seen in the last 10 s) and claims that many due tasks,
--    youngest first (a task the vendor forgot never starves a fresh one), each with a lease.
--    slot_ms says when each may be polled. Slots are spaced 2 % wider than 1/rate, so that a
--    timer firing a few ms late never puts a calendar second over the cap.
CREATE FUNCTION spendgate_claim_polls(p_instance text, p_limit integer, p_per_second integer, p_lease_seconds integer)
 RETURNS TABLE(id text, model text, unit "Unit", price_basis jsonb, price_book_version integer, failure_policy "FailurePolicy",
               upstream_task_id text, poll_attempts integer, kind text, accepted_at timestamptz, slot_ms integer)
 LANGUAGE plpgsql
AS $function$
#variable_conflict use_column
DECLARE
  now_at timestamptz := clock_timestamp();
  start_at timestamptz;
  live integer;
  n integer;
  spacing double precision := 1.02 / p_per_second; -- seconds between two slots
BEGIN
  INSERT INTO poller_instance AS pi (id, seen_at) VALUES (p_instance, now_at)
  ON CONFLICT (id) DO UPDATE SET seen_at = EXCLUDED.seen_at;
  SELECT greatest(pp.next_at, now_at) INTO start_at FROM poll_pace pp WHERE pp.id = 1 FOR UPDATE;
  SELECT count(*) INTO live FROM poller_instance pi WHERE pi.seen_at > now_at - interval '10 seconds';
  n := least(p_limit, ceil(p_per_second::numeric / greatest(live, 1))::integer,
             floor(extract(epoch FROM (now_at + interval '1 second') - start_at) / spacing)::integer);
  IF n <= 0 THEN RETURN; END IF;
  RETURN QUERY
  WITH c AS (
    UPDATE task t SET next_poll_at = now_at + make_interval(secs => p_lease_seconds), poll_attempts = t.poll_attempts + 1
    WHERE t.id IN (SELECT d.id FROM task d WHERE d.status = 'processing' AND d.next_poll_at <= now_at
                   ORDER BY d.accepted_at DESC LIMIT n FOR UPDATE SKIP LOCKED)
    RETURNING t.id, t.model, t.unit, t.price_basis, t.price_book_version, t.project_id, t.upstream_task_id, t.poll_attempts, t.kind, t.accepted_at
  )
  SELECT c.id::text, c.model, c.unit, c.price_basis, c.price_book_version,
         (SELECT p.failure_policy FROM project p WHERE p.id = c.project_id), c.upstream_task_id::text, c.poll_attempts, c.kind, c.accepted_at,
         (extract(epoch FROM start_at - now_at) * 1000 + (row_number() OVER (ORDER BY c.accepted_at DESC) - 1) * 1000 * spacing)::integer
  FROM c;
  GET DIAGNOSTICS n = ROW_COUNT;
  UPDATE poll_pace pp SET next_at = start_at + make_interval(secs => n * spacing) WHERE pp.id = 1;
END $function$;
