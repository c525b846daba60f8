-- spendgate_limit_refused: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_limit_refused(p_limit uuid, p_subject text, p_used text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
DECLARE
  l usage_limit;
  w timestamptz;
  prefix text;
  announced integer;
  data jsonb;
BEGIN
  SELECT * INTO l FROM usage_limit WHERE id = p_limit;
  IF NOT FOUND THEN RETURN; END IF;
  -- The limit's own window; tasks in flight have none, so an hour.
  w := date_trunc(CASE WHEN l.kind = 'TASKS_IN_FLIGHT' THEN 'hour' ELSE 'minute' END, now());
  prefix := format('limited:%s:%s:', l.id, spendgate_iso(w));
  data := jsonb_build_object(
    'project', (SELECT jsonb_build_object('id', p.id, 'name', p.name) FROM project p WHERE p.id = l.project_id),
    'limit', jsonb_build_object(
      'id', l.id, 'kind', l.kind, 'amount', l.amount::text, 'scope', l.scope,
      'scopeValue', coalesce(l.scope_value, (SELECT k.prefix FROM api_key k WHERE k.id = l.scope_key_id)),
      'user', nullif(p_subject, ''), 'used', p_used, 'windowStart', spendgate_iso(w)));
  announced := spendgate_users_capped(prefix, p_subject);
  IF announced IS NOT NULL THEN
    PERFORM spendgate_emit('limit.refused', l.project_id, prefix || '*',
                           jsonb_set(data, '{limit,user}', 'null'::jsonb)
                             || jsonb_build_object('capped', true, 'announcedUsers', announced,
                                                   'note', 'more end users were refused in this window; they are not announced one by one'));
    RETURN;
  END IF;
  PERFORM spendgate_emit('limit.refused', l.project_id, prefix || p_subject, data);
END $function$;

COMMENT ON FUNCTION public.spendgate_limit_refused(p_limit uuid, p_subject text, p_used text) IS 'Limits (decisions §20): the first refusal by a limit in its window (its minute; an hour for tasks in flight) is one limit.refused event, per subject, capped as budget.exhausted is (decisions §8): the first 10 end users of an EACH_USER limit one by one, then one capped event, then nothing for the window. Written after the refusal, which writes nothing itself.';
