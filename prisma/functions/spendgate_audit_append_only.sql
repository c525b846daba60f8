-- spendgate_audit_append_only: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261125160100_audit_append_only (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_audit_append_only()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  RAISE EXCEPTION 'audit_record is append-only: % refused', TG_OP USING ERRCODE = 'raise_exception';
END $function$;

COMMENT ON FUNCTION public.spendgate_audit_append_only() IS 'The audit trail is append-only (decisions §12): UPDATE, DELETE and TRUNCATE are refused, as on the ledger. A database superuser can still turn triggers off (session_replication_role = replica): the hash chain is what proves, afterwards, that nothing was changed (`spendgate audit verify`, src/audit/audit-chain.ts).';
