-- spendgate_hold_one: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261126100000_hold_and_record_of_one (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_hold_one(p_project uuid, p_key uuid, p_user text, p_tags text[], p_model text, p_family text, p_kind text, p_unit "Unit", p_hold numeric, p_estimate numeric, p_exactness "Exactness", p_tier text, p_warnings text[], p_basis jsonb, p_version integer, p_line_components text[], p_line_quantities numeric[], p_line_rates numeric[], p_line_pers numeric[], p_line_amounts numeric[], p_idempotency_key text, p_request_hash text, p_at timestamp with time zone, p_ref uuid)
 RETURNS TABLE(outcome text, task_id bigint, in_force integer)
 LANGUAGE plpgsql
AS $function$
BEGIN
  LOCK TABLE price_book_version IN ROW SHARE MODE;
  PERFORM spendgate_lock_project(p_project);
  RETURN QUERY
  WITH v AS MATERIALIZED (
    SELECT x.at, (SELECT pv.version FROM price_book_version pv WHERE pv.effective_at <= x.at ORDER BY pv.version DESC LIMIT 1) AS in_force
    FROM (SELECT coalesce(p_at, clock_timestamp()) AS at) x
  ),
  -- Every budget the request counts in, with its balance for the period (NULL: none yet).
  bal AS MATERIALIZED (
    SELECT b.id, b.hard, b."limit", b.thresholds, b.subject, b.period_start, p.spent, p.held
    FROM (SELECT bb.id, bb.hard, bb."limit", bb.thresholds, spendgate_period_start(bb.period, v.at) AS period_start,
                 spendgate_budget_subject(bb.scope, bb.scope_key_id, bb.scope_value, true, p_key, p_user, coalesce(p_tags, '{}'),
                                          bb.model_scope, bb.model_value, p_model, p_family, p_kind) AS subject
          FROM budget bb, v WHERE bb.project_id = p_project AND bb.unit = p_unit AND bb.deleted_at IS NULL) b
    LEFT JOIN budget_period p ON p.budget_id = b.id AND p.period_start = b.period_start AND p.subject = b.subject
    WHERE b.subject IS NOT NULL
  ),
  ok AS MATERIALIZED (
    SELECT v.at, v.in_force, (p_at IS NOT NULL OR v.in_force IS NULL OR v.in_force = p_version) AS priced,
           NOT EXISTS (SELECT 1 FROM bal WHERE bal.held IS NULL OR NOT spendgate_hold_fits(bal.hard, bal."limit", bal.spent, bal.held, p_hold))
           AND (p_idempotency_key IS NULL OR NOT EXISTS (SELECT 1 FROM task_idempotency k WHERE k.project_id = p_project AND k.idempotency_key = p_idempotency_key))
           -- a project with limits (decisions §20): spendgate_place_holds checks them, one request at a time
           AND NOT EXISTS (SELECT 1 FROM usage_limit l WHERE l.project_id = p_project) AS fits
    FROM v
  ),
  t AS (
    INSERT INTO task (id, project_id, api_key_id, end_user, tags, model, family, kind, unit, status, price_basis, price_book_version,
                      exactness, estimate_amount, estimate_tier, estimate_warnings, estimate_lines, hold_amount,
                      idempotency_key, request_hash, accepted_at, updated_at, submission_ref, next_poll_at)
    SELECT spendgate_new_task_id(ok.at), p_project, p_key, p_user, coalesce(p_tags, '{}'), p_model, p_family, p_kind, p_unit, 'submitting', p_basis, p_version,
           p_exactness, p_estimate, p_tier, coalesce(p_warnings, '{}'),
           ARRAY(SELECT ROW(l.c, l.q, l.r, l.p, l.a)::spendgate_line
                 FROM unnest(p_line_components, p_line_quantities, p_line_rates, p_line_pers, p_line_amounts) WITH ORDINALITY AS l(c, q, r, p, a, n)
                 ORDER BY l.n),
           p_hold, p_idempotency_key, p_request_hash, ok.at, ok.at, p_ref, spendgate_first_poll_at(ok.at)
    FROM ok WHERE ok.priced AND ok.fits
    RETURNING id, accepted_at
  ),
  k AS (
    INSERT INTO task_idempotency (project_id, idempotency_key, task_id)
    SELECT p_project, p_idempotency_key, t.id FROM t WHERE p_idempotency_key IS NOT NULL
  ),
  e AS (
    INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at)
    SELECT p_project, t.id, 'hold', p_unit, p_hold, t.accepted_at FROM t WHERE p_hold > 0
  ),
  raised AS (
    UPDATE budget_period p SET held = p.held + p_hold
    FROM bal, ok
    WHERE ok.priced AND ok.fits AND p.budget_id = bal.id AND p.period_start = bal.period_start AND p.subject = bal.subject
    RETURNING p.budget_id, p.period_start, p.subject, p.spent + p.held AS after
  ),
  -- Thresholds this hold crossed (as spendgate_place_holds records them).
  crossed AS (
    INSERT INTO budget_alert (budget_id, period_start, subject, threshold, used_amount)
    SELECT r.budget_id, r.period_start, r.subject, th, r.after
    FROM raised r JOIN bal ON bal.id = r.budget_id AND bal.subject = r.subject, unnest(bal.thresholds) th
    WHERE p_hold > 0 AND spendgate_threshold_crossed(bal."limit", th, r.after - p_hold, r.after)
    ON CONFLICT DO NOTHING
  )
  SELECT CASE WHEN NOT ok.priced THEN 'stale_price' WHEN NOT ok.fits THEN 'fallback' ELSE 'held' END, (SELECT t.id FROM t), ok.in_force
  FROM ok;
END $function$;

COMMENT ON FUNCTION public.spendgate_hold_one(p_project uuid, p_key uuid, p_user text, p_tags text[], p_model text, p_family text, p_kind text, p_unit "Unit", p_hold numeric, p_estimate numeric, p_exactness "Exactness", p_tier text, p_warnings text[], p_basis jsonb, p_version integer, p_line_components text[], p_line_quantities numeric[], p_line_rates numeric[], p_line_pers numeric[], p_line_amounts numeric[], p_idempotency_key text, p_request_hash text, p_at timestamp with time zone, p_ref uuid) IS 'One request''s hold in three statements: the price book''s lock, the project''s lock, and one statement that writes only when the request is priced with the version in force (or carries its own acceptance time), every balance it counts in exists and fits, its project has no limits (decisions §20), and no task of the project already has its Idempotency-Key. Otherwise it writes nothing and answers ''fallback'' (the gateway then calls spendgate_place_holds, which makes new periods'' and new end users'' balances, refuses, and answers repeated keys) or ''stale_price'' with the version in force. The locks are those of spendgate_place_holds, in its order; the statement runs after both, so its snapshot sees every budget, balance and key committed before the lock was granted.';
