-- spendgate_budget_event_data: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261123223900_alerts_events (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_budget_event_data(p_budget uuid, p_period_start timestamp with time zone, p_subject text)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$
  SELECT jsonb_build_object(
    'project', jsonb_build_object('id', p.id, 'name', p.name),
    'budget', jsonb_build_object(
      'id', b.id, 'scope', b.scope, 'scopeValue', CASE WHEN b.scope = 'API_KEY' THEN k.prefix ELSE b.scope_value END,
      'user', nullif(p_subject, ''), 'modelScope', b.model_scope, 'modelValue', b.model_value, 'unit', b.unit, 'period', b.period, 'hard', b.hard,
      'periodStart', spendgate_iso(w.period_start), 'periodEnd', spendgate_iso(w.period_end),
      'limit', b."limit"::text, 'spent', coalesce(bp.spent, 0)::text, 'held', coalesce(bp.held, 0)::text,
      'remaining', (b."limit" - coalesce(bp.spent, 0) - coalesce(bp.held, 0))::text))
  FROM budget b JOIN project p ON p.id = b.project_id LEFT JOIN api_key k ON k.id = b.scope_key_id
  CROSS JOIN LATERAL spendgate_period_window(b.period, p_period_start) w
  LEFT JOIN budget_period bp ON bp.budget_id = b.id AND bp.period_start = w.period_start AND bp.subject = p_subject
  WHERE b.id = p_budget;
$function$;

COMMENT ON FUNCTION public.spendgate_budget_event_data(p_budget uuid, p_period_start timestamp with time zone, p_subject text) IS 'What an event says about a budget in one period window: its scope, limit and balance.';
