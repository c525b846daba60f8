-- A submission's own name, given by the gateway before its hold (decisions §17). When the database
-- fails while a hold commits (a failover, a restart), the gateway cannot know whether the hold
-- was recorded; it answers 503 naming this reference and, once the database answers again,
-- releases whatever hold carries it (spendgate_release_unsent): nothing was sent to the vendor.
-- No index: the release looks among tasks still submitting (task_submitting_since, a handful).
ALTER TABLE task ADD COLUMN submission_ref uuid;
ALTER TYPE spendgate_hold_request ADD ATTRIBUTE submission_ref uuid;
-- spendgate_hold_one takes the reference: a new argument list is a new function, so the old one
-- goes and its file is applied again whatever its text.
DROP FUNCTION IF EXISTS public.spendgate_hold_one(uuid, uuid, text, text[], text, text, text, "Unit", numeric, numeric, "Exactness", text, text[], jsonb, integer, text[], numeric[], numeric[], numeric[], numeric[], text, text, timestamp with time zone);
DO $$ BEGIN
  IF to_regclass('"_spendgate_functions"') IS NOT NULL THEN
    DELETE FROM "_spendgate_functions" WHERE name IN ('functions/spendgate_hold_one.sql', 'functions/spendgate_place_holds.sql', 'functions/spendgate_place_holds_in_order.sql');
  END IF;
END $$;
