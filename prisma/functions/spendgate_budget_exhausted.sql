-- spendgate_budget_exhausted: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261125150000_exhaustion_cap (of 2).
CREATE OR REPLACE FUNCTION public.spendgate_budget_exhausted(p_budget uuid, p_subject text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
DECLARE
  b budget;
  w record;
  prefix text;
  announced integer;
BEGIN
  SELECT * INTO b FROM budget WHERE id = p_budget;
  IF NOT FOUND THEN RETURN; END IF;
  SELECT * INTO w FROM spendgate_period_window(b.period, now());
  prefix := format('exhausted:%s:%s:', b.id, spendgate_iso(w.period_start));
  announced := spendgate_users_capped(prefix, p_subject);
  IF announced IS NOT NULL THEN
    PERFORM spendgate_emit('budget.exhausted', b.project_id, prefix || '*',
                           spendgate_budget_event_data(b.id, w.period_start, '')
                             || jsonb_build_object('capped', true, 'announcedUsers', announced,
                                                   'note', 'more end users were refused in this period; they are not announced one by one'));
    RETURN;
  END IF;
  PERFORM spendgate_emit('budget.exhausted', b.project_id, prefix || p_subject, spendgate_budget_event_data(b.id, w.period_start, p_subject));
END $function$;

COMMENT ON FUNCTION public.spendgate_budget_exhausted(p_budget uuid, p_subject text) IS 'Client-caused alerts are bounded (decisions §8). A budget.exhausted event per end user of an EACH_USER budget is a client''s to cause: every new X-Spendgate-User refused is a new subject, so 500 refused requests cost nothing and made 500 events and deliveries. Per budget and period the first 10 users'' exhaustion is announced one by one; the 11th refused user makes one more event, with `capped: true` and no user, saying further users are not announced; after it, nothing. Refusals are still counted (metrics) and the 402s still name the user. The count reads the outbox''s cause index by range (a constant-free LIKE would not use it), under a transaction lock per budget and period so that two instances never both pass the cap.';
