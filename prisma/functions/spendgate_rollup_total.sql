-- spendgate_rollup_total: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261122045700_spend_rollup_total_trigger (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_rollup_total()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    UPDATE spend_rollup_total SET
      tasks = tasks + NEW.tasks - OLD.tasks,
      unpriced_tasks = unpriced_tasks + NEW.unpriced_tasks - OLD.unpriced_tasks,
      amount = amount + NEW.amount - OLD.amount,
      input_tokens = input_tokens + NEW.input_tokens - OLD.input_tokens,
      output_tokens = output_tokens + NEW.output_tokens - OLD.output_tokens,
      cache_read_tokens = cache_read_tokens + NEW.cache_read_tokens - OLD.cache_read_tokens,
      cache_write_5m_tokens = cache_write_5m_tokens + NEW.cache_write_5m_tokens - OLD.cache_write_5m_tokens,
      cache_write_1h_tokens = cache_write_1h_tokens + NEW.cache_write_1h_tokens - OLD.cache_write_1h_tokens,
      cache_write_tokens = cache_write_tokens + NEW.cache_write_tokens - OLD.cache_write_tokens,
      video_seconds = video_seconds + NEW.video_seconds - OLD.video_seconds,
      images = images + NEW.images - OLD.images
    WHERE day = NEW.day AND project_id = NEW.project_id AND model = NEW.model AND unit = NEW.unit;
    RETURN NULL;
  END IF;
  INSERT INTO spend_rollup_total AS t (day, project_id, model, unit, tasks, unpriced_tasks, amount, input_tokens,
                                       output_tokens, cache_read_tokens, cache_write_5m_tokens, cache_write_1h_tokens,
                                       cache_write_tokens, video_seconds, images)
  VALUES (NEW.day, NEW.project_id, NEW.model, NEW.unit, NEW.tasks, NEW.unpriced_tasks, NEW.amount, NEW.input_tokens,
          NEW.output_tokens, NEW.cache_read_tokens, NEW.cache_write_5m_tokens, NEW.cache_write_1h_tokens,
          NEW.cache_write_tokens, NEW.video_seconds, NEW.images)
  ON CONFLICT (day, project_id, model, unit) DO UPDATE SET
    tasks = t.tasks + EXCLUDED.tasks, unpriced_tasks = t.unpriced_tasks + EXCLUDED.unpriced_tasks,
    amount = t.amount + EXCLUDED.amount, input_tokens = t.input_tokens + EXCLUDED.input_tokens,
    output_tokens = t.output_tokens + EXCLUDED.output_tokens, cache_read_tokens = t.cache_read_tokens + EXCLUDED.cache_read_tokens,
    cache_write_5m_tokens = t.cache_write_5m_tokens + EXCLUDED.cache_write_5m_tokens,
    cache_write_1h_tokens = t.cache_write_1h_tokens + EXCLUDED.cache_write_1h_tokens,
    cache_write_tokens = t.cache_write_tokens + EXCLUDED.cache_write_tokens,
    video_seconds = t.video_seconds + EXCLUDED.video_seconds, images = t.images + EXCLUDED.images;
  RETURN NULL;
END $function$;

COMMENT ON FUNCTION public.spendgate_rollup_total() IS 'Hand-written: keeps spend_rollup_total equal to spend_rollup summed over status, in the same transaction as every roll-up write (settlement and adjustments both go through spend_rollup, so neither needs to know about the total). Roll-up rows are only inserted or incremented, never deleted: a delta of NEW minus OLD is all the total needs.';
