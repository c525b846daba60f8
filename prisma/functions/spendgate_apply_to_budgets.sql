-- spendgate_apply_to_budgets: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261123211800_attribution_ledger (of 2).
CREATE OR REPLACE FUNCTION public.spendgate_apply_to_budgets(p_project uuid, p_unit "Unit", p_has_task boolean, p_key uuid, p_user text, p_tags text[], p_model text, p_family text, p_kind text, p_at timestamp with time zone, p_release numeric, p_charge numeric)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
DECLARE
  b record;
  w record;
  bp budget_period;
  before numeric;
BEGIN
  FOR b IN SELECT bb.*, spendgate_budget_subject(bb.scope, bb.scope_key_id, bb.scope_value, p_has_task, p_key, p_user, coalesce(p_tags, '{}'),
                                                 bb.model_scope, bb.model_value, p_model, p_family, p_kind) AS subject
           FROM budget bb WHERE bb.project_id = p_project AND bb.unit = p_unit AND bb.deleted_at IS NULL ORDER BY bb.id LOOP
    CONTINUE WHEN b.subject IS NULL;
    SELECT * INTO w FROM spendgate_period_window(b.period, p_at);
    UPDATE budget_period SET held = held - p_release, spent = spent + p_charge
    WHERE budget_id = b.id AND period_start = w.period_start AND subject = b.subject
    RETURNING * INTO bp;
    IF FOUND THEN
      before := bp.spent + bp.held + p_release - p_charge;
    ELSE
      bp := spendgate_budget_period(b.id, p_at, b.subject); -- from the ledger: the movement included
      before := bp.spent + bp.held + p_release - p_charge;
    END IF;
    PERFORM spendgate_record_crossings(b.id, bp.period_start, b.subject, b."limit", b.thresholds, before, bp.spent + bp.held);
  END LOOP;
END $function$;

COMMENT ON FUNCTION public.spendgate_apply_to_budgets(p_project uuid, p_unit "Unit", p_has_task boolean, p_key uuid, p_user text, p_tags text[], p_model text, p_family text, p_kind text, p_at timestamp with time zone, p_release numeric, p_charge numeric) IS 'Hand-written. Attribution (decisions §7): a task''s API key, end user and tags decide which budgets count it; spend by key, user and tag is rolled up for reports and the FOCUS export. * A budget''s scope is PROJECT, API_KEY, TAG, USER or EACH_USER. spendgate_budget_subject says, for a budget and a task''s attribution, under which subject the budget counts the task ('''' for every scope but EACH_USER, whose subject is the end user) or NULL when it does not count it. Every function that moves a budget''s balance (the hold, settlement, release, adjustments, resolution) and the ledger''s own derivation of a balance use it: admission stays one atomic step, whatever the scopes, and reconcile proves every scoped balance from the ledger. * budget_period and budget_alert rows carry that subject: an EACH_USER budget has one balance (and one set of threshold crossings) per user and period, made on the user''s first use. * A period row made on the way to moving money was derived from the ledger after the movement''s entries were written, so it already holds the movement: spendgate_apply_to_budgets now moves only rows that existed before (the old body counted such a movement twice, for a task accepted in a window the budget had no row for yet). * spend_rollup_by is kept with spend_rollup, in the same transactions; existing settled tasks and adjustments are rolled up below. Functions are restated whole (PostgreSQL replaces a body as a unit); the hold functions'' result gains the refusing budget''s scope, so they are dropped and created again.';
