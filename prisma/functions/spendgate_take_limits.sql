-- spendgate_take_limits: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_take_limits(p_task bigint, p_project uuid, p_key uuid, p_user text, p_tags text[], p_tokens bigint, p_at timestamp with time zone)
 RETURNS void
 LANGUAGE sql
AS $function$
  WITH l AS (
    SELECT l.id, l.kind, s.subject, spendgate_limit_window(l.kind, p_at) AS w,
           CASE l.kind WHEN 'TOKENS_PER_MINUTE' THEN coalesce(p_tokens, 0) ELSE 1 END AS adds
    FROM usage_limit l
    CROSS JOIN LATERAL (SELECT spendgate_budget_subject(l.scope, l.scope_key_id, l.scope_value, true, p_key, p_user, coalesce(p_tags, '{}'),
                                                NULL, NULL, NULL, NULL, NULL) AS subject) s
    WHERE l.project_id = p_project AND s.subject IS NOT NULL
  ), minute AS (
    INSERT INTO limit_use AS u (limit_id, subject, window_start, used)
    SELECT l.id, l.subject, l.w, l.adds FROM l WHERE l.adds > 0
    ON CONFLICT (limit_id, subject) DO UPDATE SET
      -- counted in the row's minute when that is this request's or a later one (spendgate_limit_used)
      used = spendgate_limit_used(u.window_start, u.used, EXCLUDED.window_start) + EXCLUDED.used,
      window_start = greatest(u.window_start, EXCLUDED.window_start)
    RETURNING u.limit_id, u.subject, u.window_start
  )
  -- A tokens-per-minute hold remembers the minute it was counted in, where settlement corrects it.
  INSERT INTO limit_hold (task_id, limit_id, subject, window_start, tokens)
  SELECT p_task, l.id, l.subject, coalesce(m.window_start, l.w), CASE WHEN l.kind = 'TOKENS_PER_MINUTE' THEN l.adds ELSE 0 END
  FROM l LEFT JOIN minute m ON m.limit_id = l.id AND m.subject = l.subject
  WHERE l.kind = 'TASKS_IN_FLIGHT' OR (l.kind = 'TOKENS_PER_MINUTE' AND l.adds > 0)
$function$;

COMMENT ON FUNCTION public.spendgate_take_limits(p_task bigint, p_project uuid, p_key uuid, p_user text, p_tags text[], p_tokens bigint, p_at timestamp with time zone) IS 'Limits (decisions §20): an admitted request''s use of every limit that counts it, in the hold''s transaction after its task is written: its count in limit_use (a row per limit and subject: a minute''s, begun again in a new minute, or the tasks in flight), and a limit_hold row while the task is in flight (to lower the count when it ends; a token estimate to correct at settlement). spendgate_place_holds does the same for a batch in one pass. spendgate_release_limits ends them.';
