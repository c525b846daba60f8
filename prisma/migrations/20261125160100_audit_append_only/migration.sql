-- The audit trail is append-only (decisions §12): UPDATE, DELETE and TRUNCATE are refused, as on
-- the ledger. A database superuser can still turn triggers off (session_replication_role =
-- replica): the hash chain is what proves, afterwards, that nothing was changed
-- (`spendgate audit verify`, src/audit/audit-chain.ts).
CREATE FUNCTION public.spendgate_audit_append_only()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  RAISE EXCEPTION 'audit_record is append-only: % refused', TG_OP USING ERRCODE = 'raise_exception';
END $function$;

CREATE TRIGGER audit_record_append_only BEFORE DELETE OR UPDATE ON audit_record FOR EACH ROW EXECUTE FUNCTION spendgate_audit_append_only();
CREATE TRIGGER audit_record_no_truncate BEFORE TRUNCATE ON audit_record FOR EACH STATEMENT EXECUTE FUNCTION spendgate_audit_append_only();

-- A person's email is kept lower-cased (how an invitation finds them); a session is one of three kinds.
ALTER TABLE person ADD CONSTRAINT person_email_lower CHECK (email = lower(email));
ALTER TABLE session ADD CONSTRAINT session_kind_known CHECK (kind IN ('person', 'admin', 'project_key'));
-- A token belongs to exactly one holder.
ALTER TABLE access_token ADD CONSTRAINT access_token_one_holder CHECK ((person_id IS NULL) <> (service_account_id IS NULL));
