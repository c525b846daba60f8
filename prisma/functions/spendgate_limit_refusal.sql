-- spendgate_limit_refusal: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_limit_refusal(p_project uuid, p_key uuid, p_user text, p_tags text[], p_tokens bigint, p_at timestamp with time zone)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$
  SELECT jsonb_build_object(
           'limitId', l.id, 'kind', l.kind, 'limit', l.amount::text, 'used', u.used::text, 'adds', u.adds::text,
           'scope', l.scope, 'scopeValue', coalesce(l.scope_value, (SELECT k.prefix FROM api_key k WHERE k.id = l.scope_key_id)),
           'subject', s.subject,
           'windowEnd', CASE WHEN l.kind <> 'TASKS_IN_FLIGHT' THEN spendgate_iso(u.w + interval '1 minute') END,
           'retryAfter', CASE WHEN l.kind = 'TASKS_IN_FLIGHT' THEN 1
                              ELSE greatest(1, ceil(extract(epoch FROM u.w + interval '1 minute' - p_at)))::int END)
  FROM usage_limit l
  CROSS JOIN LATERAL (SELECT spendgate_budget_subject(l.scope, l.scope_key_id, l.scope_value, true, p_key, p_user, coalesce(p_tags, '{}'),
                                                NULL, NULL, NULL, NULL, NULL) AS subject) s
  CROSS JOIN LATERAL (SELECT spendgate_limit_window(l.kind, p_at) AS w) r
  LEFT JOIN limit_use x ON x.limit_id = l.id AND x.subject = s.subject
  -- The minute it would count in: its own, or the row's when that is later (spendgate_limit_used).
  CROSS JOIN LATERAL (
    SELECT coalesce(spendgate_limit_used(x.window_start, x.used, r.w), 0) AS used, greatest(x.window_start, r.w) AS w,
           CASE l.kind WHEN 'TOKENS_PER_MINUTE' THEN coalesce(p_tokens, 0) ELSE 1 END AS adds) u
  WHERE l.project_id = p_project AND s.subject IS NOT NULL AND u.adds > 0 AND u.used + u.adds > l.amount
  ORDER BY l.id
  LIMIT 1
$function$;

COMMENT ON FUNCTION public.spendgate_limit_refusal(p_project uuid, p_key uuid, p_user text, p_tags text[], p_tokens bigint, p_at timestamp with time zone) IS 'Limits (decisions §20): the first limit of the project that counts this request (scoped as budgets are, spendgate_budget_subject) and that it would take past its amount, as JSON for the 429 (what it counts, its use now, when its minute ends, Retry-After); NULL when every limit fits. Called by spendgate_place_holds_in_order under the project''s lock, after the budgets fit, so a request is refused by at most one of them and by the budget first. Every kind counts in limit_use (spendgate_limit_window): a UTC minute, or for tasks in flight one row that admissions raise and the ends of tasks lower.';
