-- Alerts (decisions §8): events written to the outbox in the same transaction as their cause,
-- one per cause (outbox_event.cause is unique), fanned out to the matching endpoints' deliveries
-- by a trigger in that transaction too. The dispatcher (src/alerts/webhook-dispatcher.ts) sends them.
--
-- * budget.threshold_crossed: a budget_alert row is written once per budget, period, subject and
--   threshold (its unique index; every hold and settlement path records crossings there), so a
--   trigger on it makes exactly one event however many requests and instances cross together.
-- * budget.exhausted: spendgate_budget_exhausted, called by the gateway when a hard budget
--   refuses; one per budget, period and subject.
-- * task.overrun and task.needs_review: a trigger on task, when overrun or needs_review is first set.

CREATE INDEX webhook_delivery_due ON webhook_delivery (next_attempt_at) WHERE status = 'PENDING';

-- An event's timestamps and amounts as text: ISO 8601 UTC, exact decimals (never JSON numbers).
CREATE FUNCTION spendgate_iso(t timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
$$;

-- Writes one event unless its cause already has one. The payload is the Standard Webhooks body.
CREATE FUNCTION spendgate_emit(p_type text, p_project uuid, p_cause text, p_data jsonb) RETURNS void LANGUAGE sql AS $$
  INSERT INTO outbox_event (id, type, project_id, cause, payload)
  SELECT i.id, p_type, p_project, p_cause,
         jsonb_build_object('type', p_type, 'timestamp', spendgate_iso(now()), 'data', p_data || jsonb_build_object('eventId', i.id))::text
  FROM (SELECT 'msg_' || replace(gen_random_uuid()::text, '-', '') AS id) i
  ON CONFLICT (cause) DO NOTHING;
$$;

-- What an event says about a budget in one period window: its scope, limit and balance.
CREATE FUNCTION spendgate_budget_event_data(p_budget uuid, p_period_start timestamptz, p_subject text) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'project', jsonb_build_object('id', p.id, 'name', p.name),
    'budget', jsonb_build_object(
      'id', b.id, 'scope', b.scope, 'scopeValue', CASE WHEN b.scope = 'API_KEY' THEN k.prefix ELSE b.scope_value END,
      'user', nullif(p_subject, ''), 'unit', b.unit, 'period', b.period, 'hard', b.hard,
      'periodStart', spendgate_iso(w.period_start), 'periodEnd', spendgate_iso(w.period_end),
      'limit', b."limit"::text, 'spent', coalesce(bp.spent, 0)::text, 'held', coalesce(bp.held, 0)::text,
      'remaining', (b."limit" - coalesce(bp.spent, 0) - coalesce(bp.held, 0))::text))
  FROM budget b JOIN project p ON p.id = b.project_id LEFT JOIN api_key k ON k.id = b.scope_key_id
  CROSS JOIN LATERAL spendgate_period_window(b.period, p_period_start) w
  LEFT JOIN budget_period bp ON bp.budget_id = b.id AND bp.period_start = w.period_start AND bp.subject = p_subject
  WHERE b.id = p_budget;
$$;

CREATE FUNCTION spendgate_threshold_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM spendgate_emit('budget.threshold_crossed', b.project_id,
                         format('threshold:%s:%s:%s:%s', NEW.budget_id, spendgate_iso(NEW.period_start), NEW.subject, NEW.threshold),
                         spendgate_budget_event_data(NEW.budget_id, NEW.period_start, NEW.subject)
                           || jsonb_build_object('threshold', NEW.threshold, 'usedAtCrossing', NEW.used_amount::text))
  FROM budget b WHERE b.id = NEW.budget_id;
  RETURN NULL;
END $$;
CREATE TRIGGER budget_alert_event AFTER INSERT ON budget_alert FOR EACH ROW EXECUTE FUNCTION spendgate_threshold_event();

-- A hard budget refused a submission (called by the gateway): the first refusal of its period
-- and subject is the event; later ones find its cause taken.
CREATE FUNCTION spendgate_budget_exhausted(p_budget uuid, p_subject text) RETURNS void LANGUAGE sql AS $$
  SELECT spendgate_emit('budget.exhausted', b.project_id,
                        format('exhausted:%s:%s:%s', b.id, spendgate_iso(w.period_start), p_subject),
                        spendgate_budget_event_data(b.id, w.period_start, p_subject))
  FROM budget b CROSS JOIN LATERAL spendgate_period_window(b.period, now()) w WHERE b.id = p_budget;
$$;

CREATE FUNCTION spendgate_task_event() RETURNS trigger LANGUAGE plpgsql AS $$
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
  IF NEW.overrun IS NOT NULL AND (TG_OP = 'INSERT' OR OLD.overrun IS NULL) THEN
    PERFORM spendgate_emit('task.overrun', NEW.project_id, 'overrun:' || NEW.id, data);
  END IF;
  IF NEW.needs_review AND (TG_OP = 'INSERT' OR NOT OLD.needs_review) THEN
    PERFORM spendgate_emit('task.needs_review', NEW.project_id, 'review:' || NEW.id, data);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER task_events AFTER UPDATE OF overrun, needs_review ON task FOR EACH ROW
  WHEN ((NEW.overrun IS NOT NULL AND OLD.overrun IS NULL) OR (NEW.needs_review AND NOT OLD.needs_review))
  EXECUTE FUNCTION spendgate_task_event();
CREATE TRIGGER task_events_on_insert AFTER INSERT ON task FOR EACH ROW
  WHEN (NEW.needs_review OR NEW.overrun IS NOT NULL)
  EXECUTE FUNCTION spendgate_task_event();

-- Each event to every endpoint that wants it, in the event's transaction.
CREATE FUNCTION spendgate_outbox_fanout() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO webhook_delivery (event_id, endpoint_id)
  SELECT NEW.id, e.id FROM webhook_endpoint e
  WHERE e.enabled AND e.deleted_at IS NULL AND (e.project_id IS NULL OR e.project_id = NEW.project_id)
    AND (cardinality(e.events) = 0 OR NEW.type = ANY(e.events));
  RETURN NULL;
END $$;
CREATE TRIGGER outbox_event_fanout AFTER INSERT ON outbox_event FOR EACH ROW EXECUTE FUNCTION spendgate_outbox_fanout();
