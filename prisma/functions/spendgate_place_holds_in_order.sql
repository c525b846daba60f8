-- spendgate_place_holds_in_order: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261125114000_money_edges (of 5).
CREATE OR REPLACE FUNCTION public.spendgate_place_holds_in_order(p_requests spendgate_hold_request[])
 RETURNS TABLE(i integer, outcome text, task_id bigint, budget_id uuid, budget_limit numeric, budget_remaining numeric, budget_period "Period", budget_hard boolean, response_body text, response_status integer, budget_scope "BudgetScope", budget_scope_value text, budget_subject text, in_force integer)
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
  tokens bigint;
  limited jsonb;
BEGIN
  FOR r IN SELECT * FROM unnest(p_requests) x ORDER BY x.i
  LOOP
    at := coalesce(r.accepted_at, batch_at);
    i := r.i; task_id := NULL; budget_id := NULL; budget_limit := NULL; budget_remaining := NULL;
    budget_period := NULL; budget_hard := NULL; response_body := NULL; response_status := NULL;
    budget_scope := NULL; budget_scope_value := NULL; budget_subject := NULL; in_force := NULL;

    IF r.idempotency_key IS NOT NULL THEN
      SELECT k.task_id AS id, t.request_hash, t.response_body, t.response_status, t.status INTO existing
      FROM task_idempotency k LEFT JOIN task t ON t.id = k.task_id
      WHERE k.project_id = r.project_id AND k.idempotency_key = r.idempotency_key;
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
    FOR b IN SELECT bb.*, spendgate_budget_subject(bb.scope, bb.scope_key_id, bb.scope_value, true, r.api_key_id, r.end_user, coalesce(r.tags, '{}'),
                                                   bb.model_scope, bb.model_value, r.model, r.family, r.kind) AS subject
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
      IF NOT spendgate_hold_fits(b.hard, b."limit", v_spent, v_held, amount) THEN
        -- As it is: negative when settled charges ran past the limit (an overrun).
        SELECT b.id AS id, b."limit" AS lim, b."limit" - v_spent - v_held AS remaining, b.period AS period,
               b.scope AS scope, coalesce(b.scope_value, (SELECT k.prefix FROM api_key k WHERE k.id = b.scope_key_id)) AS scope_value,
               b.subject AS subject, b.model_scope AS model_scope, b.model_value AS model_value INTO refused;
        was_refused := true;
        EXIT;
      END IF;
    END LOOP;
    IF was_refused THEN
      outcome := 'refused'; budget_id := refused.id; budget_limit := refused.lim;
      budget_remaining := refused.remaining; budget_period := refused.period; budget_hard := true;
      budget_scope := refused.scope; budget_scope_value := refused.scope_value; budget_subject := refused.subject;
      -- a budget on part of the catalog (decisions §20) says which, for the 402
      response_body := CASE WHEN refused.model_scope IS NOT NULL
                            THEN jsonb_build_object('modelScope', refused.model_scope, 'modelValue', refused.model_value)::text END;
      RETURN NEXT; CONTINUE;
    END IF;

    -- Its limits (decisions §20), once the budgets fit: a refusal names the first limit that does
    -- not (the JSON in response_body) and writes nothing.
    tokens := (SELECT coalesce(sum(l.quantity), 0) FROM unnest(r.lines) l
               WHERE l.component IN ('input', 'output', 'cache_read', 'cache_write_5m', 'cache_write_1h', 'cache_write'))::bigint;
    limited := spendgate_limit_refusal(r.project_id, r.api_key_id, r.end_user, r.tags, tokens, at);
    IF limited IS NOT NULL THEN
      outcome := 'limited'; response_body := limited::text;
      RETURN NEXT; CONTINUE;
    END IF;

    -- Admitted: its new balances first, from the ledger before this task's hold is in it.
    PERFORM spendgate_budget_period(k.bid, at, k.subject) FROM unnest(m_bid, m_subject) AS k(bid, subject);

    INSERT INTO task (id, project_id, api_key_id, end_user, tags, model, family, kind, unit, status, price_basis, price_book_version,
                      exactness, estimate_amount, estimate_tier, estimate_warnings, estimate_lines, hold_amount,
                      idempotency_key, request_hash, accepted_at, updated_at, submission_ref, next_poll_at)
    VALUES (spendgate_new_task_id(at), r.project_id, r.api_key_id, r.end_user, coalesce(r.tags, '{}'), r.model, r.family, r.kind, r.unit, 'submitting', r.price_basis,
            r.price_book_version, r.exactness, r.estimate_amount, r.estimate_tier,
            coalesce(r.estimate_warnings, '{}'), coalesce(r.lines, '{}'), amount, r.idempotency_key, r.request_hash, at, at, r.submission_ref, spendgate_first_poll_at(at))
    RETURNING id INTO new_task;
    IF r.idempotency_key IS NOT NULL THEN
      INSERT INTO task_idempotency (project_id, idempotency_key, task_id) VALUES (r.project_id, r.idempotency_key, new_task);
    END IF;
    PERFORM spendgate_take_limits(new_task, r.project_id, r.api_key_id, r.end_user, r.tags, tokens, at);

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
      WHERE spendgate_threshold_crossed(bb."limit", t, u.after - amount, u.after)
      ON CONFLICT DO NOTHING;
    END IF;

    outcome := 'held'; task_id := new_task;
    RETURN NEXT;
  END LOOP;
END $function$;

COMMENT ON FUNCTION public.spendgate_place_holds_in_order(p_requests spendgate_hold_request[]) IS '5. One request at a time: a balance not written yet is read from the ledger and written only for an admitted request, so a refused request leaves no row (no end user appears for it).';
