-- spendgate_threshold_event: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261123223900_alerts_events (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_threshold_event()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  PERFORM spendgate_emit('budget.threshold_crossed', b.project_id,
                         format('threshold:%s:%s:%s:%s', NEW.budget_id, spendgate_iso(NEW.period_start), NEW.subject, NEW.threshold),
                         spendgate_budget_event_data(NEW.budget_id, NEW.period_start, NEW.subject)
                           || jsonb_build_object('threshold', NEW.threshold, 'usedAtCrossing', NEW.used_amount::text))
  FROM budget b WHERE b.id = NEW.budget_id;
  RETURN NULL;
END $function$;

COMMENT ON FUNCTION public.spendgate_threshold_event() IS 'Alerts (decisions §8): events written to the outbox in the same transaction as their cause, one per cause (outbox_event.cause is unique), fanned out to the matching endpoints'' deliveries by a trigger in that transaction too. The dispatcher (src/alerts/webhook-dispatcher.ts) sends them. * budget.threshold_crossed: a budget_alert row is written once per budget, period, subject and threshold (its unique index; every hold and settlement path records crossings there), so a trigger on it makes exactly one event however many requests and instances cross together. * budget.exhausted: spendgate_budget_exhausted, called by the gateway when a hard budget refuses; one per budget, period and subject. * task.overrun and task.needs_review: a trigger on task, when overrun or needs_review is first set.';
