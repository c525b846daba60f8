-- Hand-written. What a task was quoted and held at is fixed when the hold writes it, and a
-- charge's lines when settlement writes them: the ledger's entries and the budget periods were
-- computed from those figures, so changing one afterwards would make them disagree. Corrections
-- are ledger adjustments, as for ledger_entry (append-only since the ledger_functions migration).
--
-- The task trigger names its columns (UPDATE OF …), so PostgreSQL fires it only for an UPDATE
-- whose SET list names one of them: the updates on the submission path (record, settle, reject,
-- poll scheduling) name none and do not run it. They still pay PostgreSQL's handling of a BEFORE
-- ROW trigger on the table (it locks the row before deciding which triggers fire): measured
-- ≈2 µs per single-row update (35.6–38.2 µs against 34.3–35.9 without the trigger, alternated).
-- An AFTER trigger measured no cheaper here (35.8–41.6 µs) and would fire after the write.
CREATE FUNCTION spendgate_task_quote_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (NEW.project_id, NEW.unit, NEW.accepted_at, NEW.price_basis, NEW.price_book_version, NEW.exactness,
      NEW.estimate_amount, NEW.estimate_tier, NEW.estimate_warnings, NEW.estimate_lines, NEW.hold_amount)
     IS DISTINCT FROM
     (OLD.project_id, OLD.unit, OLD.accepted_at, OLD.price_basis, OLD.price_book_version, OLD.exactness,
      OLD.estimate_amount, OLD.estimate_tier, OLD.estimate_warnings, OLD.estimate_lines, OLD.hold_amount) THEN
    RAISE EXCEPTION 'task %: its project, unit, acceptance time, quote and hold are fixed at submission; post an adjustment instead', OLD.id
      USING ERRCODE = 'raise_exception';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER task_quote_fixed
  BEFORE UPDATE OF project_id, unit, accepted_at, price_basis, price_book_version, exactness,
                   estimate_amount, estimate_tier, estimate_warnings, estimate_lines, hold_amount
  ON task FOR EACH ROW EXECUTE FUNCTION spendgate_task_quote_fixed();

CREATE FUNCTION spendgate_charge_line_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'charge_line is written once, at settlement: % refused; post an adjustment instead', TG_OP
    USING ERRCODE = 'raise_exception';
END $$;
CREATE TRIGGER charge_line_fixed BEFORE UPDATE OR DELETE ON charge_line
  FOR EACH ROW EXECUTE FUNCTION spendgate_charge_line_fixed();
CREATE TRIGGER charge_line_no_truncate BEFORE TRUNCATE ON charge_line
  FOR EACH STATEMENT EXECUTE FUNCTION spendgate_charge_line_fixed();
