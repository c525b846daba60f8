-- Early warning (decisions §15, issue 33): spend per hour of acceptance for each project, key and
-- end user, kept with every settlement and adjustment (one statement, three rows); the forecasts
-- and the anomaly detector read it, never raw tasks.
CREATE FUNCTION spendgate_hourly_add(p_project uuid, p_key text, p_user text, p_unit "Unit", p_at timestamptz, p_amount numeric, p_tasks int)
 RETURNS void
 LANGUAGE sql
AS $function$
  INSERT INTO spend_hourly AS s (hour, dimension, project_id, value, unit, amount, tasks)
  VALUES (date_trunc('hour', p_at), 'project', p_project, '', p_unit, p_amount, p_tasks),
         (date_trunc('hour', p_at), 'apiKey', p_project, coalesce(p_key, ''), p_unit, p_amount, p_tasks),
         (date_trunc('hour', p_at), 'user', p_project, coalesce(p_user, ''), p_unit, p_amount, p_tasks)
  ON CONFLICT (hour, dimension, project_id, value, unit) DO UPDATE SET amount = s.amount + EXCLUDED.amount, tasks = s.tasks + EXCLUDED.tasks;
$function$;

-- Settled spend lands there too (a prior-period item does not: it is a correction, not usage).
CREATE OR REPLACE FUNCTION spendgate_rollup_add(t task, p_status text, p_exactness "Exactness", p_charge numeric, p_rollup jsonb, p_at timestamptz)
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
  IF v_status <> 'prior_period' THEN
    PERFORM spendgate_hourly_add(t.project_id, (SELECT k.prefix FROM api_key k WHERE k.id = t.api_key_id), t.end_user, t.unit, t.accepted_at, p_charge, 1);
  END IF;
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
  IF belongs IS NULL THEN
    PERFORM spendgate_hourly_add(p_project, (SELECT k.prefix FROM api_key k WHERE k.id = t.api_key_id), t.end_user, p_unit, post, p_amount, 0);
  END IF;
  RETURN entry;
END $function$;

-- The weekly digest is an event of the whole gateway (no project): only endpoints of every project
-- receive it, and only those that asked for it by name.
CREATE OR REPLACE FUNCTION public.spendgate_outbox_fanout()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  INSERT INTO webhook_delivery (event_id, endpoint_id)
  SELECT NEW.id, e.id FROM webhook_endpoint e
  WHERE e.enabled AND e.deleted_at IS NULL AND (e.project_id IS NULL OR e.project_id = NEW.project_id)
    AND ((cardinality(e.events) = 0 AND NEW.type <> 'spend.digest') OR NEW.type = ANY(e.events));
  RETURN NULL;
END $function$;

-- The hourly history of what was settled before this migration, from the tasks themselves (once).
INSERT INTO spend_hourly AS s (hour, dimension, project_id, value, unit, amount, tasks)
SELECT date_trunc('hour', t.accepted_at), d.dimension, t.project_id, d.value, t.unit, sum(coalesce(t.charge_amount, 0)), count(*)::int
FROM task t
LEFT JOIN api_key k ON k.id = t.api_key_id
CROSS JOIN LATERAL (VALUES ('project', ''), ('apiKey', coalesce(k.prefix, '')), ('user', coalesce(t.end_user, ''))) d(dimension, value)
WHERE t.settled_at IS NOT NULL AND t.accepted_at > now() - interval '35 days'
GROUP BY 1, 2, 3, 4, 5
ON CONFLICT (hour, dimension, project_id, value, unit) DO UPDATE SET amount = s.amount + EXCLUDED.amount, tasks = s.tasks + EXCLUDED.tasks;
