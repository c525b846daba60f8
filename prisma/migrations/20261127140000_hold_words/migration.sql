-- One vocabulary for the hold's life (hold, charge, release) and names that say what they carry:
-- - the hold functions answer the price-book version in force in a column of its own, in_force,
--   no longer through response_status (which is an HTTP status for a replayed answer);
-- - spendgate_reject, which releases the hold of a task the vendor refused, is
--   spendgate_release_rejected.
-- A function's result or name cannot change in place: they are dropped here and made again from
-- prisma/functions, which migrate applies after the versioned migrations.
DROP FUNCTION IF EXISTS public.spendgate_place_holds(json);
DROP FUNCTION IF EXISTS public.spendgate_place_holds_in_order(spendgate_hold_request[]);
DROP FUNCTION IF EXISTS public.spendgate_reject(bigint, text);
-- Their files are applied again whatever their text (a database made before the files has no record yet).
DO $$ BEGIN
  IF to_regclass('"_spendgate_functions"') IS NOT NULL THEN
    DELETE FROM "_spendgate_functions" WHERE name IN ('functions/spendgate_place_holds.sql', 'functions/spendgate_place_holds_in_order.sql', 'functions/spendgate_reject.sql');
  END IF;
END $$;
