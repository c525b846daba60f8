-- Contract terms (decisions §19), hand-written beside 20261127221227_contract_terms (the tables).
-- A term is a discount of a model, family or kind, or a net rate of one line component of a model
-- (one tier, or every tier); one row per key and version, and a version's terms are the whole
-- contract in force from its effective time (src/pricing/contract.ts applies them).
ALTER TABLE contract_term
  ADD CONSTRAINT contract_term_scope CHECK (scope IN ('model', 'family', 'kind')),
  ADD CONSTRAINT contract_term_discount_or_rate CHECK ((discount_percent IS NULL) <> (net_rate IS NULL)),
  ADD CONSTRAINT contract_term_discount_range CHECK (discount_percent IS NULL OR (discount_percent >= 0 AND discount_percent <= 100)),
  ADD CONSTRAINT contract_term_net_rate_of_model CHECK (net_rate IS NULL OR (net_rate >= 0 AND scope = 'model' AND component IS NOT NULL)),
  ADD CONSTRAINT contract_term_discount_whole CHECK (discount_percent IS NULL OR (component IS NULL AND tier IS NULL));
CREATE UNIQUE INDEX contract_term_key ON contract_term (version, unit, scope, value, coalesce(component, ''), coalesce(tier, ''));

-- A charge's lines keep the price book's rate and amount beside the contracted ones (NULL: no term
-- priced the line, list and contracted are the same).
-- (spendgate_settle writes them, and spendgate_rollup_by_add keeps list minus contracted in
-- spend_rollup_by.contract_discount: prisma/functions.)

-- A task's lines as one list (estimate and charge), now with the charge's list figures.
CREATE OR REPLACE VIEW task_line AS
 SELECT t.id AS task_id, 'estimate'::text AS stage, l.seq::integer AS seq, l.component, l.quantity, l.rate, l.per, l.amount,
        NULL::numeric AS list_rate, NULL::numeric AS list_amount
   FROM task t
     CROSS JOIN LATERAL unnest(t.estimate_lines) WITH ORDINALITY l(component, quantity, rate, per, amount, seq)
UNION ALL
 SELECT c.task_id, c.stage, c.seq, c.component, c.quantity, c.rate, c.per, c.amount, c.list_rate, c.list_amount
   FROM charge_line c;
