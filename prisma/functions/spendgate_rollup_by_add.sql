-- spendgate_rollup_by_add: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261123221600_user_rollup_ledger (of 2).
CREATE OR REPLACE FUNCTION public.spendgate_rollup_by_add(p_project uuid, p_model text, p_unit "Unit", p_version integer, p_day date, p_key_prefix text, p_user text, p_tags text[], p_tasks integer, p_unpriced integer, p_amount numeric, p_rollup jsonb)
 RETURNS void
 LANGUAGE sql
AS $function$
  WITH m AS (
    SELECT coalesce((p_rollup->>'input_tokens')::bigint, 0) AS input, coalesce((p_rollup->>'output_tokens')::bigint, 0) AS output,
           coalesce((p_rollup->>'cache_read_tokens')::bigint, 0) AS cache_read, coalesce((p_rollup->>'cache_write_5m_tokens')::bigint, 0) AS cw5m,
           coalesce((p_rollup->>'cache_write_1h_tokens')::bigint, 0) AS cw1h, coalesce((p_rollup->>'cache_write_tokens')::bigint, 0) AS cw,
           coalesce((p_rollup->>'video_seconds')::numeric, 0) AS seconds, coalesce((p_rollup->>'images')::int, 0) AS images,
           -- list minus contracted (decisions §19): p_rollup's list_amount comes only when a contract term priced the charge
           coalesce((p_rollup->>'list_amount')::numeric - p_amount, 0) AS discount
  ), by_who AS (
    INSERT INTO spend_rollup_by AS s (dimension, period, project_id, value, model, unit, price_book_version, tasks, unpriced_tasks,
                                      amount, input_tokens, output_tokens, cache_read_tokens, cache_write_5m_tokens,
                                      cache_write_1h_tokens, cache_write_tokens, video_seconds, images, contract_discount)
    SELECT d.dimension, d.period, p_project, d.value, p_model, p_unit, p_version, p_tasks, p_unpriced, p_amount,
           m.input, m.output, m.cache_read, m.cw5m, m.cw1h, m.cw, m.seconds, m.images, m.discount
    FROM m, (SELECT 'apiKey' AS dimension, p_day AS period, coalesce(p_key_prefix, '') AS value
             UNION ALL SELECT 'tag', p_day, t FROM unnest(coalesce(p_tags, '{}')) t) d
    ON CONFLICT (dimension, period, project_id, value, model, unit, price_book_version) DO UPDATE SET
      tasks = s.tasks + EXCLUDED.tasks, unpriced_tasks = s.unpriced_tasks + EXCLUDED.unpriced_tasks,
      amount = s.amount + EXCLUDED.amount, input_tokens = s.input_tokens + EXCLUDED.input_tokens,
      output_tokens = s.output_tokens + EXCLUDED.output_tokens, cache_read_tokens = s.cache_read_tokens + EXCLUDED.cache_read_tokens,
      cache_write_5m_tokens = s.cache_write_5m_tokens + EXCLUDED.cache_write_5m_tokens,
      cache_write_1h_tokens = s.cache_write_1h_tokens + EXCLUDED.cache_write_1h_tokens,
      cache_write_tokens = s.cache_write_tokens + EXCLUDED.cache_write_tokens,
      video_seconds = s.video_seconds + EXCLUDED.video_seconds, images = s.images + EXCLUDED.images,
      contract_discount = s.contract_discount + EXCLUDED.contract_discount
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
$function$;

COMMENT ON FUNCTION public.spendgate_rollup_by_add(p_project uuid, p_model text, p_unit "Unit", p_version integer, p_day date, p_key_prefix text, p_user text, p_tags text[], p_tasks integer, p_unpriced integer, p_amount numeric, p_rollup jsonb) IS 'End users leave spend_rollup_by for two narrower monthly tables (see schema.prisma): measured with 1M tasks of 100,000 users, the per-model user rows were 695k (as many as 0.7 of the tasks) and a month''s top 100 users took 240 ms to aggregate; a row per user and month, with its amount indexed, answers it from the first 100 index entries. * spendgate_rollup_by_add keeps apiKey and tag rows as before, and now the user''s rows of spend_rollup_user (per project, '''' without a user) and spend_rollup_user_all (named users, over projects) in the same statement, so in the same transaction as the settlement. * The hold finds a batch''s balances by their whole keys (an EACH_USER budget has many). * The user rows kept so far move over at the end (bench and tests run that statement alone).';
