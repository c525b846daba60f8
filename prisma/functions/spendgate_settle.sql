-- spendgate_settle: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261125170100_month_close_functions (of 4).
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
  -- A charge of 0 is posted when there is no hold to release (a task a contract makes free): the
  -- settlement is in the books at the instant its roll-up counts it, where a bar's drill-down finds it.
  IF p_charge <> 0 OR t.hold_amount = 0 THEN
    INSERT INTO ledger_entry (project_id, task_id, kind, unit, amount, effective_at, belongs_to)
    VALUES (t.project_id, t.id, 'charge', t.unit, p_charge, post, belongs);
  END IF;
  PERFORM spendgate_apply_to_budgets(t.project_id, t.unit, true, t.api_key_id, t.end_user, t.tags, t.model, t.family, t.kind, post, t.hold_amount, p_charge);

  -- listRate and listAmount: only on a line a contract term priced (decisions §19).
  INSERT INTO charge_line (task_id, stage, seq, component, quantity, rate, per, amount, list_rate, list_amount)
  SELECT p_task, 'charge', l.ordinality::int, l.value->>'component', (l.value->>'quantity')::numeric,
         (l.value->>'rate')::numeric, (l.value->>'per')::numeric, (l.value->>'amount')::numeric,
         (l.value->>'listRate')::numeric, (l.value->>'listAmount')::numeric
  FROM jsonb_array_elements(coalesce(p_lines, '[]'::jsonb)) WITH ORDINALITY l;

  -- The price list's grain for FOCUS unit prices (decisions §19), beside the totals below.
  INSERT INTO spend_rollup_sku AS s (period, project_id, key_prefix, model, unit, price_book_version, component, tier,
                                     rate, per, list_rate, lines, quantity, amount, list_amount)
  SELECT (post AT TIME ZONE 'UTC')::date, t.project_id, coalesce((SELECT k.prefix FROM api_key k WHERE k.id = t.api_key_id), ''),
         t.model, t.unit, t.price_book_version, l.value->>'component', coalesce(p_tier, ''), (l.value->>'rate')::numeric,
         (l.value->>'per')::numeric, coalesce((l.value->>'listRate')::numeric, (l.value->>'rate')::numeric), count(*)::int,
         sum((l.value->>'quantity')::numeric), sum((l.value->>'amount')::numeric),
         sum(coalesce((l.value->>'listAmount')::numeric, (l.value->>'amount')::numeric))
  FROM jsonb_array_elements(coalesce(p_lines, '[]'::jsonb)) l
  GROUP BY l.value->>'component', l.value->>'rate', l.value->>'per', l.value->>'listRate'
  ON CONFLICT (period, project_id, key_prefix, model, unit, price_book_version, component, tier, rate, per) DO UPDATE SET
    lines = s.lines + EXCLUDED.lines, quantity = s.quantity + EXCLUDED.quantity,
    amount = s.amount + EXCLUDED.amount, list_amount = s.list_amount + EXCLUDED.list_amount;

  -- No longer in flight; a tokens-per-minute limit counts what the lines counted (decisions §20).
  PERFORM spendgate_release_limits(p_task, (SELECT coalesce(sum((l.value->>'quantity')::numeric), 0)::bigint
                                           FROM jsonb_array_elements(coalesce(p_lines, '[]'::jsonb)) l
                                           WHERE l.value->>'component' IN ('input', 'output', 'cache_read', 'cache_write_5m', 'cache_write_1h', 'cache_write')));

  PERFORM spendgate_rollup_add(t, p_status::text, p_exactness, p_charge, p_rollup, post);
  settled := true; overrun := excess;
  RETURN NEXT;
END $function$;

COMMENT ON FUNCTION public.spendgate_settle(p_task bigint, p_status "TaskStatus", p_charge numeric, p_exactness "Exactness", p_tier text, p_warnings text[], p_needs_review boolean, p_review_reason text, p_usage jsonb, p_lines jsonb, p_rollup jsonb) IS 'Closing a month (decisions §13). Every function that writes a ledger entry for a task or an adjustment first takes month_close in ROW SHARE mode, then posts where the books are open: `spendgate_post_at`. A close takes the table in EXCLUSIVE mode, so it waits for every such movement in flight and every later one waits for it, then sees it: a movement lands before the close (in the month) or after it (a prior-period item), never both, never lost.';
