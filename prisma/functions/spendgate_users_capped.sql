-- spendgate_users_capped: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_users_capped(p_prefix text, p_subject text)
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
DECLARE
  announced integer;
BEGIN
  IF p_subject = '' THEN RETURN NULL; END IF;
  PERFORM pg_advisory_xact_lock(hashtextextended(p_prefix, 11));
  SELECT count(*) INTO announced FROM outbox_event e
  WHERE e.cause ~>=~ p_prefix AND e.cause ~<~ (left(p_prefix, -1) || ';');
  IF announced >= 10 AND NOT EXISTS (SELECT 1 FROM outbox_event e WHERE e.cause = p_prefix || p_subject) THEN
    RETURN announced;
  END IF;
  RETURN NULL;
END $function$;

COMMENT ON FUNCTION public.spendgate_users_capped(p_prefix text, p_subject text) IS 'Client-caused alerts are bounded (decisions §8): for events whose cause is <prefix><end user> (a budget''s exhaustion, a limit''s refusal, per window), how many users were announced when this one is past the cap of 10 and not announced yet (the caller then writes one capped event, <prefix>*, instead); NULL when it is announced on its own. The count reads the outbox''s cause index by range (a constant-free LIKE would not use it), under a transaction lock per prefix so that two instances never both pass the cap.';
