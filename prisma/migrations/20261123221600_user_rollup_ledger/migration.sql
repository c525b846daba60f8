-- End users leave spend_rollup_by for two narrower monthly tables (see schema.prisma): measured
-- with 1M tasks of 100,000 users, the per-model user rows were 695k (as many as 0.7 of the tasks)
-- and a month's top 100 users took 240 ms to aggregate; a row per user and month, with its
-- amount indexed, answers it from the first 100 index entries.
--
-- * spendgate_rollup_by_add keeps apiKey and tag rows as before, and now the user's rows of
--   spend_rollup_user (per project, '' without a user) and spend_rollup_user_all (named users,
--   over projects) in the same statement, so in the same transaction as the settlement.
-- * The hold finds a batch's balances by their whole keys (an EACH_USER budget has many).
-- * The user rows kept so far move over at the end (bench and tests run that statement alone).

CREATE INDEX spend_rollup_user_none ON spend_rollup_user (period, unit) WHERE value = '';
ALTER TABLE spend_rollup_user_all ADD CONSTRAINT spend_rollup_user_all_named CHECK (value <> '');

CREATE OR REPLACE FUNCTION spendgate_rollup_by_add(p_project uuid, p_model text, p_unit "Unit", p_version int, p_day date,
                                                   p_key_prefix text, p_user text, p_tags text[], p_tasks int, p_unpriced int,
                                                   p_amount numeric, p_rollup jsonb)
RETURNS void LANGUAGE sql AS $$
  WITH m AS (
    SELECT coalesce((p_rollup->>'input_tokens')::bigint, 0) AS input, coalesce((p_rollup->>'output_tokens')::bigint, 0) AS output,
           coalesce((p_rollup->>'cache_read_tokens')::bigint, 0) AS cache_read, coalesce((p_rollup->>'cache_write_5m_tokens')::bigint, 0) AS cw5m,
           coalesce((p_rollup->>'cache_write_1h_tokens')::bigint, 0) AS cw1h, coalesce((p_rollup->>'cache_write_tokens')::bigint, 0) AS cw,
           coalesce((p_rollup->>'video_seconds')::numeric, 0) AS seconds, coalesce((p_rollup->>'images')::int, 0) AS images
  ), by_who AS (
    INSERT INTO spend_rollup_by AS s (dimension, period, project_id, value, model, unit, price_book_version, tasks, unpriced_tasks,
                                      amount, input_tokens, output_tokens, cache_read_tokens, cache_write_5m_tokens,
                                      cache_write_1h_tokens, cache_write_tokens, video_seconds, images)
    SELECT d.dimension, d.period, p_project, d.value, p_model, p_unit, p_version, p_tasks, p_unpriced, p_amount,
           m.input, m.output, m.cache_read, m.cw5m, m.cw1h, m.cw, m.seconds, m.images
    FROM m, (SELECT 'apiKey' AS dimension, p_day AS period, coalesce(p_key_prefix, '') AS value
             UNION ALL SELECT 'tag', p_day, t FROM unnest(coalesce(p_tags, '{}')) t) d
    ON CONFLICT (dimension, period, project_id, value, model, unit, price_book_version) DO UPDATE SET
      tasks = s.tasks + EXCLUDED.tasks, unpriced_tasks = s.unpriced_tasks + EXCLUDED.unpriced_tasks,
      amount = s.amount + EXCLUDED.amount, input_tokens = s.input_tokens + EXCLUDED.input_tokens,
      output_tokens = s.output_tokens + EXCLUDED.output_tokens, cache_read_tokens = s.cache_read_tokens + EXCLUDED.cache_read_tokens,
      cache_write_5m_tokens = s.cache_write_5m_tokens + EXCLUDED.cache_write_5m_tokens,
      cache_write_1h_tokens = s.cache_write_1h_tokens + EXCLUDED.cache_write_1h_tokens,
      cache_write_tokens = s.cache_write_tokens + EXCLUDED.cache_write_tokens,
      video_seconds = s.video_seconds + EXCLUDED.video_seconds, images = s.images + EXCLUDED.images
  ), by_user AS (
    INSERT INTO spend_rollup_user AS s (period, project_id, value, unit, tasks, unpriced_tasks, amount, input_tokens, output_tokens,
                                        cache_read_tokens, cache_write_5m_tokens, cache_write_1h_tokens, cache_write_tokens, video_seconds, images)
    SELECT date_trunc('month', p_day)::date, p_project, coalesce(p_user, ''), p_unit, p_tasks, p_unpriced, p_amount,
           m.input, m.output, m.cache_read, m.cw5m, m.cw1h, m.cw, m.seconds, m.images
    FROM m
    ON CONFLICT (period, project_id, value, unit) DO UPDATE SET
      tasks = s.tasks + EXCLUDED.tasks, unpriced_tasks = s.unpriced_tasks + EXCLUDED.unpriced_tasks,
      amount = s.amount + EXCLUDED.amount, input_tokens = s.input_tokens + EXCLUDED.input_tokens,
      output_tokens = s.output_tokens + EXCLUDED.output_tokens, cache_read_tokens = s.cache_read_tokens + EXCLUDED.cache_read_tokens,
      cache_write_5m_tokens = s.cache_write_5m_tokens + EXCLUDED.cache_write_5m_tokens,
      cache_write_1h_tokens = s.cache_write_1h_tokens + EXCLUDED.cache_write_1h_tokens,
      cache_write_tokens = s.cache_write_tokens + EXCLUDED.cache_write_tokens,
      video_seconds = s.video_seconds + EXCLUDED.video_seconds, images = s.images + EXCLUDED.images
  )
  INSERT INTO spend_rollup_user_all AS s (period, value, unit, tasks, unpriced_tasks, amount, input_tokens, output_tokens,
                                          cache_read_tokens, cache_write_5m_tokens, cache_write_1h_tokens, cache_write_tokens, video_seconds, images)
  SELECT date_trunc('month', p_day)::date, p_user, p_unit, p_tasks, p_unpriced, p_amount,
         m.input, m.output, m.cache_read, m.cw5m, m.cw1h, m.cw, m.seconds, m.images
  FROM m WHERE coalesce(p_user, '') <> ''
  ON CONFLICT (period, value, unit) DO UPDATE SET
    tasks = s.tasks + EXCLUDED.tasks, unpriced_tasks = s.unpriced_tasks + EXCLUDED.unpriced_tasks,
    amount = s.amount + EXCLUDED.amount, input_tokens = s.input_tokens + EXCLUDED.input_tokens,
    output_tokens = s.output_tokens + EXCLUDED.output_tokens, cache_read_tokens = s.cache_read_tokens + EXCLUDED.cache_read_tokens,
    cache_write_5m_tokens = s.cache_write_5m_tokens + EXCLUDED.cache_write_5m_tokens,
    cache_write_1h_tokens = s.cache_write_1h_tokens + EXCLUDED.cache_write_1h_tokens,
    cache_write_tokens = s.cache_write_tokens + EXCLUDED.cache_write_tokens,
    video_seconds = s.video_seconds + EXCLUDED.video_seconds, images = s.images + EXCLUDED.images;
$$;

-- The start of the budget period containing `at` (spendgate_period_window's start), as an
-- expression the planner inlines.
CREATE FUNCTION spendgate_period_start(p "Period", at timestamptz) RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE p
           WHEN 'DAILY' THEN date_trunc('day', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
           WHEN 'WEEKLY' THEN date_trunc('week', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
           WHEN 'MONTHLY' THEN date_trunc('month', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
           ELSE timestamptz '1970-01-01 00:00:00+00'
         END;
$$;

-- Holds: a batch's balances are looked up by their whole key (see the comment inside).
CREATE OR REPLACE FUNCTION spendgate_place_holds(p_requests json)
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
  -- The window's start is spendgate_period_start, a scalar SQL function PostgreSQL inlines: the
  -- record-returning spendgate_period_window was called once per subject (an EACH_USER budget
  -- has one per user of the batch), a sixth of a batch's time.
  FROM (SELECT g.bid, spendgate_period_start(g.period, g.at) AS period_start, g.subject, min(g.at) AS at, sum(g.total) AS total
        FROM (SELECT b.id AS bid, b.period, s.subject, coalesce(x.accepted_at, batch_at) AS at, sum(x.hold_amount) AS total
              FROM unnest(reqs) x
              JOIN budget b ON b.project_id = x.project_id AND b.unit = x.unit AND b.deleted_at IS NULL
              CROSS JOIN LATERAL (SELECT spendgate_budget_subject(b.scope, b.scope_key_id, b.scope_value, true, x.api_key_id,
                                                                 x.end_user, coalesce(x.tags, '{}')) AS subject) s
              WHERE s.subject IS NOT NULL
              GROUP BY b.id, b.period, s.subject, coalesce(x.accepted_at, batch_at)) g
        GROUP BY g.bid, spendgate_period_start(g.period, g.at), g.subject) k;

  -- Each end user's first balance of an EACH_USER budget in this batch, in one statement, from
  -- their tasks' ledger entries as spendgate_budget_balance computes it (a new user has none):
  -- one call per user cost a third of a batch while users were new.
  INSERT INTO budget_period (budget_id, period_start, subject, period_end, spent, held)
  SELECT k.bid, k.period_start, k.subject, w.period_end,
         coalesce(sum(e.amount) FILTER (WHERE e.kind IN ('charge', 'adjustment')), 0),
         coalesce(sum(e.amount) FILTER (WHERE e.kind = 'hold'), 0) - coalesce(sum(e.amount) FILTER (WHERE e.kind = 'release'), 0)
  FROM (SELECT * FROM unnest(s_bid, s_start, s_subject, s_at) AS k(bid, period_start, subject, at)
        WHERE NOT EXISTS (SELECT 1 FROM budget_period p WHERE p.budget_id = k.bid AND p.period_start = k.period_start AND p.subject = k.subject)
        OFFSET 0) k -- the missing ones first: only they are looked up in the ledger
  JOIN budget b ON b.id = k.bid AND b.scope = 'EACH_USER'
  CROSS JOIN LATERAL spendgate_period_window(b.period, k.at) w
  LEFT JOIN task t ON t.project_id = b.project_id AND t.end_user = k.subject
  LEFT JOIN ledger_entry e ON e.task_id = t.id AND e.unit = b.unit AND e.effective_at >= w.period_start AND e.effective_at < w.period_end
  GROUP BY k.bid, k.period_start, k.subject, w.period_end;
  -- Any other budget's row for this window, if missing (a new period).
  PERFORM spendgate_budget_period(k.bid, k.at, k.subject) FROM unnest(s_bid, s_start, s_subject, s_at) AS k(bid, period_start, subject, at)
  WHERE NOT EXISTS (SELECT 1 FROM budget_period p WHERE p.budget_id = k.bid AND p.period_start = k.period_start AND p.subject = k.subject);

  -- Each balance by its whole key (a LATERAL lookup on k alone): joined to the budget first, a
  -- plan cached while budget_period was small looked rows up by budget_id only and filtered the
  -- rest, reading every user's row of an EACH_USER budget for each request (1,600 holds/s
  -- instead of 6,000 with 1,000 users).
  SELECT coalesce(bool_and(NOT b.hard OR p.spent + p.held + k.total <= b."limit"), true) INTO fits
  FROM unnest(s_bid, s_start, s_subject, s_total) AS k(bid, period_start, subject, total)
  JOIN budget b ON b.id = k.bid
  CROSS JOIN LATERAL (SELECT bp.spent, bp.held FROM budget_period bp
                      WHERE bp.budget_id = k.bid AND bp.period_start = k.period_start AND bp.subject = k.subject
                      OFFSET 0) p; -- a fence: not flattened, so looked up by k's whole key

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
-- The hold's statements each touch a few rows by their keys. A plan cached (per connection)
-- while budget_period or budget was small scans them whole once they are big: with an EACH_USER
-- budget, budget_period grows by a row per user within seconds, long before autovacuum analyzes
-- it, and every batch scanned it (bench/FINDINGS.md, "Scoped budgets"). Index paths only.
ALTER FUNCTION spendgate_place_holds(json) SET enable_seqscan = off;

-- The user rows kept so far move to the new tables (summed over model and price-book version).
WITH moved AS (
  DELETE FROM spend_rollup_by WHERE dimension = 'user'
  RETURNING period, project_id, value, unit, tasks, unpriced_tasks, amount, input_tokens, output_tokens, cache_read_tokens,
            cache_write_5m_tokens, cache_write_1h_tokens, cache_write_tokens, video_seconds, images
), per_project AS (
  INSERT INTO spend_rollup_user (period, project_id, value, unit, tasks, unpriced_tasks, amount, input_tokens, output_tokens,
                                 cache_read_tokens, cache_write_5m_tokens, cache_write_1h_tokens, cache_write_tokens, video_seconds, images)
  SELECT period, project_id, value, unit, sum(tasks), sum(unpriced_tasks), sum(amount), sum(input_tokens), sum(output_tokens),
         sum(cache_read_tokens), sum(cache_write_5m_tokens), sum(cache_write_1h_tokens), sum(cache_write_tokens), sum(video_seconds), sum(images)
  FROM moved GROUP BY period, project_id, value, unit
)
INSERT INTO spend_rollup_user_all (period, value, unit, tasks, unpriced_tasks, amount, input_tokens, output_tokens,
                                   cache_read_tokens, cache_write_5m_tokens, cache_write_1h_tokens, cache_write_tokens, video_seconds, images)
SELECT period, value, unit, sum(tasks), sum(unpriced_tasks), sum(amount), sum(input_tokens), sum(output_tokens),
       sum(cache_read_tokens), sum(cache_write_5m_tokens), sum(cache_write_1h_tokens), sum(cache_write_tokens), sum(video_seconds), sum(images)
FROM moved WHERE value <> '' GROUP BY period, value, unit;
