-- spendgate_emit: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261123223900_alerts_events (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_emit(p_type text, p_project uuid, p_cause text, p_data jsonb)
 RETURNS void
 LANGUAGE sql
AS $function$
  INSERT INTO outbox_event (id, type, project_id, cause, payload)
  SELECT i.id, p_type, p_project, p_cause,
         jsonb_build_object('type', p_type, 'timestamp', spendgate_iso(now()), 'data', p_data || jsonb_build_object('eventId', i.id))::text
  FROM (SELECT 'msg_' || replace(gen_random_uuid()::text, '-', '') AS id) i
  ON CONFLICT (cause) DO NOTHING;
$function$;

COMMENT ON FUNCTION public.spendgate_emit(p_type text, p_project uuid, p_cause text, p_data jsonb) IS 'Writes one event unless its cause already has one. The payload is the Standard Webhooks body.';
