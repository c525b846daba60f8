-- spendgate_outbox_fanout: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261125210000_webhook_test_event (of 3).
CREATE OR REPLACE FUNCTION public.spendgate_outbox_fanout()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  INSERT INTO webhook_delivery (event_id, endpoint_id)
  SELECT NEW.id, e.id FROM webhook_endpoint e
  WHERE e.enabled AND e.deleted_at IS NULL
    AND CASE WHEN NEW.type = 'webhook.test' THEN e.id::text = (NEW.payload::jsonb #>> '{data,endpointId}')
             ELSE (e.project_id IS NULL OR e.project_id = NEW.project_id)
                  AND ((cardinality(e.events) = 0 AND NEW.type <> 'spend.digest') OR NEW.type = ANY(e.events)) END;
  RETURN NULL;
END $function$;

COMMENT ON FUNCTION public.spendgate_outbox_fanout() IS 'A test event for one endpoint (decisions §8, §9: "send a test event" from the console): an event of type webhook.test goes only to the endpoint its data names (data.endpointId), whatever that endpoint subscribes to; every other event fans out as before.';
