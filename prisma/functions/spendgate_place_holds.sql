-- spendgate_place_holds: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261126000000_generic_plans_on_submission_path (of 12).
CREATE OR REPLACE FUNCTION public.spendgate_place_holds(p_requests json)
 RETURNS TABLE(i integer, outcome text, task_id bigint, budget_id uuid, budget_limit numeric, budget_remaining numeric, budget_period "Period", budget_hard boolean, response_body text, response_status integer, budget_scope "BudgetScope", budget_scope_value text, budget_subject text, in_force integer)
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
  batch_at timestamptz;
  version_in_force integer;
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
  plan_mode text;
  has_limits boolean;
  limits_fit boolean;
BEGIN
  -- The price book as the database has it (decisions §3): a publication takes this table in EXCLUSIVE
  -- mode, so this lock waits for one in progress, and the acceptance time is read after it. A
  -- request quoted with any version other than the one in force at that time is not held: its
  -- gateway loads the versions and quotes it again. So no instance accepts a task under a
  -- superseded version, whatever its cache knew.
  LOCK TABLE price_book_version IN ROW SHARE MODE;
  batch_at := clock_timestamp();
  version_in_force := (SELECT v.version FROM price_book_version v WHERE v.effective_at <= batch_at ORDER BY v.version DESC LIMIT 1);
  reqs := ARRAY(SELECT r FROM json_populate_recordset(NULL::spendgate_hold_request, p_requests) r ORDER BY r.i);
  -- Requests that carry their own acceptance time (recorded earlier, tests) keep their version; a
  -- database without any version yet (before the first start seeded it) has nothing to compare.
  IF version_in_force IS NOT NULL AND EXISTS (SELECT 1 FROM unnest(reqs) x WHERE x.accepted_at IS NULL AND x.price_book_version IS DISTINCT FROM version_in_force) THEN
    RETURN QUERY SELECT x.i, 'stale_price'::text, NULL::bigint, NULL::uuid, NULL::numeric, NULL::numeric, NULL::"Period", NULL::boolean,
                        NULL::text, NULL::int, NULL::"BudgetScope", NULL::text, NULL::text, version_in_force
                 FROM unnest(reqs) x WHERE x.accepted_at IS NULL AND x.price_book_version IS DISTINCT FROM version_in_force;
    reqs := ARRAY(SELECT x FROM unnest(reqs) x WHERE NOT (x.accepted_at IS NULL AND x.price_book_version IS DISTINCT FROM version_in_force) ORDER BY x.i);
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

  -- Limits (decisions §20): a request with its own acceptance time (recorded earlier, tests) is
  -- counted one at a time.
  IF EXISTS (SELECT 1 FROM unnest(reqs) x WHERE x.accepted_at IS NOT NULL)
     AND EXISTS (SELECT 1 FROM usage_limit l WHERE l.project_id = ANY (ARRAY(SELECT DISTINCT x.project_id FROM unnest(reqs) x))) THEN
    PERFORM spendgate_lock_project(p) FROM (SELECT DISTINCT x.project_id AS p FROM unnest(reqs) x) q
    ORDER BY hashtextextended(p::text, 7);
    RETURN QUERY SELECT * FROM spendgate_place_holds_in_order(reqs);
    RETURN;
  END IF;

  LOOP
    attempt := attempt + 1;
    BEGIN
      -- The batch's tasks and hold entries, before the lock (on the second attempt the lock is
      -- already held). SG001 below undoes them with everything else the block did.
      WITH n AS (SELECT x.*, spendgate_new_task_id(coalesce(x.accepted_at, batch_at)) AS task_id, coalesce(x.accepted_at, batch_at) AS at FROM unnest(reqs) x),
      t AS (
        INSERT INTO task (id, project_id, api_key_id, end_user, tags, model, family, kind, unit, status, price_basis, price_book_version,
                          exactness, estimate_amount, estimate_tier, estimate_warnings, estimate_lines, hold_amount,
                          idempotency_key, request_hash, accepted_at, updated_at, submission_ref, next_poll_at)
        SELECT n.task_id, n.project_id, n.api_key_id, n.end_user, coalesce(n.tags, '{}'), n.model, n.family, n.kind, n.unit, 'submitting',
               n.price_basis, n.price_book_version, n.exactness, n.estimate_amount, n.estimate_tier, coalesce(n.estimate_warnings, '{}'),
               coalesce(n.lines, '{}'), n.hold_amount, n.idempotency_key, n.request_hash, n.at, n.at, n.submission_ref, spendgate_first_poll_at(n.at)
        FROM n
      ),
      k AS (
        INSERT INTO task_idempotency (project_id, idempotency_key, task_id)
        SELECT n.project_id, n.idempotency_key, n.task_id FROM n WHERE n.idempotency_key IS NOT NULL
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
            FROM (SELECT bb.id, bb.project_id, bb.unit, bb.period, bb.hard, bb."limit", bb.scope, bb.scope_key_id, bb.scope_value, bb.model_scope, bb.model_value,
                         spendgate_period_start(bb.period, batch_at) AS batch_start,
                         -- the use from which a hold can cross a threshold: below it, no alert to look for
                         bb."limit" * (SELECT min(th) FROM unnest(bb.thresholds) th) / 100 AS alert_from
                  FROM budget bb WHERE bb.project_id = ANY (ARRAY(SELECT DISTINCT x.project_id FROM unnest(reqs) x)) AND bb.deleted_at IS NULL
                  OFFSET 0) b -- a fence: each budget's figures once, not once per request
            JOIN (SELECT x.project_id, x.unit, x.api_key_id, x.end_user, x.tags, x.model, x.family, x.kind, x.accepted_at, x.hold_amount FROM unnest(reqs) x) x
              ON x.project_id = b.project_id AND x.unit = b.unit
            CROSS JOIN LATERAL (SELECT spendgate_budget_subject(b.scope, b.scope_key_id, b.scope_value, true, x.api_key_id,
                                                               x.end_user, coalesce(x.tags, '{}'), b.model_scope, b.model_value,
                                                               x.model, x.family, x.kind) AS subject) s
            WHERE s.subject IS NOT NULL
            GROUP BY 1, 2, 3, b.hard, b."limit", b.alert_from) k;

      -- Every balance raised by the batch's total in one statement, each only where a hard limit
      -- still fits: if all of them were raised the batch is in (the lock keeps this true until
      -- commit).
      -- Planned once, not per call (bench/FINDINGS.md): unnest() of the arrays makes every custom plan look
      -- cheaper than the generic one, so PostgreSQL planned this statement on each call (≈ 0.1 ms, a
      -- fifth of a batch of one's time). The generic plan is the same index probe per balance.
      plan_mode := current_setting('plan_cache_mode');
      PERFORM set_config('plan_cache_mode', 'force_generic_plan', true);
      WITH raised AS (
        UPDATE budget_period p SET held = p.held + k.total
        FROM unnest(s_bid, s_start, s_subject, s_total, s_hard, s_limit, s_alert_from) AS k(bid, period_start, subject, total, hard, lim, alert_from)
        WHERE p.budget_id = k.bid AND p.period_start = k.period_start AND p.subject = k.subject
          AND spendgate_hold_fits(k.hard, k.lim, p.spent, p.held, k.total)
        RETURNING p.budget_id, p.period_start, p.subject, p.spent + p.held AS after, k.total, k.alert_from
      )
      SELECT array_agg(u.budget_id), array_agg(u.period_start), array_agg(u.subject), array_agg(u.after), array_agg(u.total), array_agg(u.alert_from),
             coalesce(bool_or(u.total > 0 AND u.after >= u.alert_from), false)
      INTO r_bid, r_start, r_subject, r_after, r_total, r_alert_from, alert_due FROM raised u;
      PERFORM set_config('plan_cache_mode', plan_mode, true);

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
                LEFT JOIN task t ON t.end_user = k.subject AND t.project_id IS NOT DISTINCT FROM b.project_id AND t.id <> ALL (t_id)
                  AND spendgate_counts_model(b.model_scope, b.model_value, t.model, t.family, t.kind)
                LEFT JOIN ledger_entry e ON e.task_id = t.id AND e.unit = b.unit AND e.effective_at >= w.period_start AND e.effective_at < w.period_end
                GROUP BY k.bid, k.period_start, k.subject, w.period_end, k.total, k.hard, k.lim) m
          WHERE spendgate_hold_fits(m.hard, m.lim, m.spent, m.held, m.total)
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

      -- Every limit count the batch raises (decisions §20), in one statement where it still fits:
      -- if all were raised, the batch is in; if one was not, SG001 undoes the block and the batch
      -- goes one request at a time (spendgate_place_holds_in_order refuses the request past it).
      -- Looked for under the lock, as setLimit and deleteLimit take it: a limit set before this
      -- batch holds counts it. A project without limits costs this one probe of usage_limit's index.
      has_limits := EXISTS (SELECT 1 FROM usage_limit l WHERE l.project_id = ANY (ARRAY(SELECT DISTINCT x.project_id FROM unnest(reqs) x)));
      IF has_limits THEN
        WITH x AS (
          SELECT y.i, y.project_id, y.api_key_id, y.end_user, y.tags,
                 (SELECT coalesce(sum(ln.quantity), 0) FROM unnest(y.lines) ln
                  WHERE ln.component IN ('input', 'output', 'cache_read', 'cache_write_5m', 'cache_write_1h', 'cache_write'))::bigint AS tokens
          FROM unnest(reqs) y
        ), counted AS (
          SELECT x.i, l.id, l.kind, l.amount, s.subject, spendgate_limit_window(l.kind, batch_at) AS w,
                 CASE WHEN l.kind = 'TOKENS_PER_MINUTE' THEN x.tokens ELSE 1 END AS adds
          FROM x JOIN usage_limit l ON l.project_id = x.project_id
          CROSS JOIN LATERAL (SELECT spendgate_budget_subject(l.scope, l.scope_key_id, l.scope_value, true, x.api_key_id, x.end_user,
                                                             coalesce(x.tags, '{}'), NULL, NULL, NULL, NULL, NULL) AS subject) s
          WHERE s.subject IS NOT NULL AND (l.kind <> 'TOKENS_PER_MINUTE' OR x.tokens > 0)
        ), need AS (
          SELECT c.id, c.subject, c.w, c.amount, sum(c.adds) AS adds FROM counted c GROUP BY c.id, c.subject, c.w, c.amount
        ), raised AS (
          INSERT INTO limit_use AS u (limit_id, subject, window_start, used)
          SELECT n.id, n.subject, n.w, n.adds FROM need n WHERE n.adds <= n.amount
          -- Counted in the row's minute when that is the batch's or a later one: a batch that waited on
          -- the lock across a minute's turn never moves a row back (spendgate_limit_used).
          ON CONFLICT (limit_id, subject) DO UPDATE SET
            used = spendgate_limit_used(u.window_start, u.used, EXCLUDED.window_start) + EXCLUDED.used,
            window_start = greatest(u.window_start, EXCLUDED.window_start)
          WHERE spendgate_limit_used(u.window_start, u.used, EXCLUDED.window_start) + EXCLUDED.used
                <= (SELECT ul.amount FROM usage_limit ul WHERE ul.id = u.limit_id)
          RETURNING u.limit_id, u.subject, u.window_start
        ), held AS (
          INSERT INTO limit_hold (task_id, limit_id, subject, window_start, tokens)
          SELECT t.id, c.id, c.subject, coalesce(r.window_start, c.w), CASE WHEN c.kind = 'TOKENS_PER_MINUTE' THEN c.adds ELSE 0 END
          FROM counted c JOIN unnest(t_i, t_id) AS t(i, id) ON t.i = c.i
          LEFT JOIN raised r ON r.limit_id = c.id AND r.subject = c.subject
          WHERE c.kind <> 'REQUESTS_PER_MINUTE'
        )
        SELECT (SELECT count(*) FROM raised) = (SELECT count(*) FROM need) INTO limits_fit;
        IF NOT limits_fit THEN
          RAISE EXCEPTION USING ERRCODE = 'SG001'; -- a limit reached: one request at a time, in order
        END IF;
      END IF;

      -- Thresholds crossed, looked for only where a balance reached its budget's lowest one.
      IF alert_due THEN
        INSERT INTO budget_alert (budget_id, period_start, subject, threshold, used_amount)
        SELECT u.bid, u.period_start, u.subject, th, u.after
        FROM unnest(r_bid, r_start, r_subject, r_after, r_total, r_alert_from) AS u(bid, period_start, subject, after, total, alert_from)
        JOIN budget b ON b.id = u.bid, unnest(b.thresholds) th
        WHERE u.total > 0 AND u.after >= u.alert_from AND spendgate_threshold_crossed(b."limit", th, u.after - u.total, u.after)
        ON CONFLICT DO NOTHING;
      END IF;

      RETURN QUERY
      SELECT u.i, 'held'::text, u.id, NULL::uuid, NULL::numeric, NULL::numeric, NULL::"Period", NULL::boolean, NULL::text, NULL::int,
             NULL::"BudgetScope", NULL::text, NULL::text, NULL::int
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

COMMENT ON FUNCTION public.spendgate_place_holds(p_requests json) IS 'Requests that arrived together (decisions §4): held as a whole when every balance they raise fits (spendgate_hold_fits), else one at a time in order (spendgate_place_holds_in_order); a repeated Idempotency-Key is answered in order too. A request quoted with a price-book version other than the one in force is answered stale_price with in_force (nothing written). Only the raise of the balances is planned generically; the other statements keep the planner''s choice (its rare paths, such as a new end user''s first balance, are planned with the values they look up).';
