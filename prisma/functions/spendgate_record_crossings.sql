-- spendgate_record_crossings: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261123211800_attribution_ledger (of 2).
CREATE OR REPLACE FUNCTION public.spendgate_record_crossings(p_budget uuid, p_period_start timestamp with time zone, p_subject text, p_limit numeric, p_thresholds integer[], p_before numeric, p_after numeric)
 RETURNS void
 LANGUAGE sql
AS $function$
  INSERT INTO budget_alert (budget_id, period_start, subject, threshold, used_amount)
  SELECT p_budget, p_period_start, p_subject, t, p_after
  FROM unnest(p_thresholds) t
  WHERE spendgate_threshold_crossed(p_limit, t, p_before, p_after)
  ON CONFLICT DO NOTHING;
$function$;

COMMENT ON FUNCTION public.spendgate_record_crossings(p_budget uuid, p_period_start timestamp with time zone, p_subject text, p_limit numeric, p_thresholds integer[], p_before numeric, p_after numeric) IS 'Hand-written. Attribution (decisions §7): a task''s API key, end user and tags decide which budgets count it; spend by key, user and tag is rolled up for reports and the FOCUS export. * A budget''s scope is PROJECT, API_KEY, TAG, USER or EACH_USER. spendgate_budget_subject says, for a budget and a task''s attribution, under which subject the budget counts the task ('''' for every scope but EACH_USER, whose subject is the end user) or NULL when it does not count it. Every function that moves a budget''s balance (the hold, settlement, release, adjustments, resolution) and the ledger''s own derivation of a balance use it: admission stays one atomic step, whatever the scopes, and reconcile proves every scoped balance from the ledger. * budget_period and budget_alert rows carry that subject: an EACH_USER budget has one balance (and one set of threshold crossings) per user and period, made on the user''s first use. * A period row made on the way to moving money was derived from the ledger after the movement''s entries were written, so it already holds the movement: spendgate_apply_to_budgets now moves only rows that existed before (the old body counted such a movement twice, for a task accepted in a window the budget had no row for yet). * spend_rollup_by is kept with spend_rollup, in the same transactions; existing settled tasks and adjustments are rolled up below. Functions are restated whole (PostgreSQL replaces a body as a unit); the hold functions'' result gains the refusing budget''s scope, so they are dropped and created again.';
