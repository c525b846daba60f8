-- spendgate_lock_project: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261122000100_ledger_functions (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_lock_project(p_project uuid)
 RETURNS void
 LANGUAGE sql
AS $function$
  SELECT pg_advisory_xact_lock(hashtextextended(p_project::text, 7));
$function$;

COMMENT ON FUNCTION public.spendgate_lock_project(p_project uuid) IS 'Every project-scoped money movement takes this lock first, so balances of one project change one transaction at a time, whatever the number of gateway instances.';
