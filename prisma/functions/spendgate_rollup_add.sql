-- spendgate_rollup_add: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261125180100_early_warning_functions (of 4).
CREATE OR REPLACE FUNCTION public.spendgate_rollup_add(t task, p_status text, p_exactness "Exactness", p_charge numeric, p_rollup jsonb, p_at timestamp with time zone)
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

COMMENT ON FUNCTION public.spendgate_rollup_add(t task, p_status text, p_exactness "Exactness", p_charge numeric, p_rollup jsonb, p_at timestamp with time zone) IS 'Settled spend lands there too (a prior-period item does not: it is a correction, not usage).';
