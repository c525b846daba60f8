-- spendgate_task_event: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261123223900_alerts_events (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_task_event()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
  data jsonb := jsonb_build_object(
    'project', (SELECT jsonb_build_object('id', p.id, 'name', p.name) FROM project p WHERE p.id = NEW.project_id),
    'task', jsonb_build_object(
      'id', 'gw-' || NEW.id, 'taskId', NEW.upstream_task_id::text, 'model', NEW.model, 'unit', NEW.unit, 'status', NEW.status,
      'estimate', NEW.estimate_amount::text, 'hold', NEW.hold_amount::text, 'charge', NEW.charge_amount::text,
      'overrun', NEW.overrun::text, 'acceptedAt', spendgate_iso(NEW.accepted_at),
      'apiKeyPrefix', (SELECT k.prefix FROM api_key k WHERE k.id = NEW.api_key_id), 'user', NEW.end_user, 'tags', to_jsonb(NEW.tags)),
    'reason', NEW.review_reason);
BEGIN
  -- A row moved between partitions (spendgate_month_partition, an archive) is not news.
  IF current_setting('spendgate.moving_rows', true) = 'on' THEN RETURN NULL; END IF;
  IF NEW.overrun IS NOT NULL AND (TG_OP = 'INSERT' OR OLD.overrun IS NULL) THEN
    PERFORM spendgate_emit('task.overrun', NEW.project_id, 'overrun:' || NEW.id, data);
  END IF;
  IF NEW.needs_review AND (TG_OP = 'INSERT' OR NOT OLD.needs_review) THEN
    PERFORM spendgate_emit('task.needs_review', NEW.project_id, 'review:' || NEW.id, data);
  END IF;
  RETURN NULL;
END $function$;

COMMENT ON FUNCTION public.spendgate_task_event() IS 'Alerts (decisions §8): events written to the outbox in the same transaction as their cause, one per cause (outbox_event.cause is unique), fanned out to the matching endpoints'' deliveries by a trigger in that transaction too. The dispatcher (src/alerts/webhook-dispatcher.ts) sends them. * budget.threshold_crossed: a budget_alert row is written once per budget, period, subject and threshold (its unique index; every hold and settlement path records crossings there), so a trigger on it makes exactly one event however many requests and instances cross together. * budget.exhausted: spendgate_budget_exhausted, called by the gateway when a hard budget refuses; one per budget, period and subject. * task.overrun and task.needs_review: a trigger on task, when overrun or needs_review is first set.';
