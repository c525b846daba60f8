-- spendgate_archive_month: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
CREATE OR REPLACE FUNCTION public.spendgate_archive_month(p_month date, p_by text, p_manifest jsonb)
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
DECLARE
  m_start timestamptz := p_month::timestamp AT TIME ZONE 'UTC';
  m_end timestamptz := (p_month + interval '1 month')::timestamp AT TIME ZONE 'UTC';
  ids int8multirange;
  part record;
  kept integer;
BEGIN
  -- No close, reopening or posting into the month meanwhile.
  LOCK TABLE month_close IN SHARE MODE;
  IF NOT EXISTS (SELECT 1 FROM month_close c WHERE c.month = p_month AND c.reopened_at IS NULL) THEN
    RAISE EXCEPTION 'month %: only a closed month is archived (close it first)', to_char(p_month, 'YYYY-MM') USING ERRCODE = 'SG409';
  END IF;
  IF EXISTS (SELECT 1 FROM archived_month a WHERE a.month = p_month) THEN
    RAISE EXCEPTION 'month %: already archived', to_char(p_month, 'YYYY-MM') USING ERRCODE = 'SG409';
  END IF;
  SELECT coalesce(range_agg(x.task_ids), '{}') INTO ids FROM spendgate_month_partitions(p_month) x WHERE x.table_name = 'task';

  -- Tasks that stay: still open (they settle later, as prior-period items), with entries posted
  -- after the month (a late settlement, an adjustment), or waiting for a person (under review, or
  -- named by an open vendor difference: an item is never archived out of reach). They wait in the
  -- default partition.
  CREATE TEMP TABLE archive_kept ON COMMIT DROP AS
    SELECT t.* FROM task t
    WHERE t.id <@ ids
      AND (t.settled_at IS NULL
           OR t.needs_review
           OR t.id IN (SELECT e.task_id FROM ledger_entry e WHERE e.task_id <@ ids AND e.effective_at >= m_end)
           OR t.id IN (SELECT i.task_id FROM vendor_recon_item i WHERE i.task_id <@ ids AND i.state = 'open'));
  CREATE TEMP TABLE archive_kept_lines ON COMMIT DROP AS
    SELECT c.* FROM charge_line c WHERE c.task_id IN (SELECT k.id FROM archive_kept k);

  -- What the month's entries add to balances, by whom (decisions §18; spendgate_budget_balance).
  INSERT INTO archived_spend (month, project_id, unit, has_task, api_key_id, end_user, tags, model, family, kind, spent, held)
  SELECT p_month, e.project_id, e.unit, t.id IS NOT NULL, t.api_key_id, t.end_user, coalesce(t.tags, '{}'), t.model, t.family, t.kind,
         coalesce(sum(e.amount) FILTER (WHERE e.kind IN ('charge', 'adjustment')), 0),
         coalesce(sum(e.amount) FILTER (WHERE e.kind = 'hold'), 0) - coalesce(sum(e.amount) FILTER (WHERE e.kind = 'release'), 0)
  FROM ledger_entry e LEFT JOIN task t ON t.id = e.task_id
  WHERE e.effective_at >= m_start AND e.effective_at < m_end
  GROUP BY e.project_id, e.unit, t.id IS NOT NULL, t.api_key_id, t.end_user, coalesce(t.tags, '{}'), t.model, t.family, t.kind;
  INSERT INTO archived_balance (month, budget_id, period_start, subject, spent, held)
  SELECT p_month, bp.budget_id, bp.period_start, bp.subject, l.spent, l.held
  FROM budget_period bp
  CROSS JOIN LATERAL spendgate_budget_balance(bp.budget_id, bp.subject, greatest(bp.period_start, m_start), least(bp.period_end, m_end)) l
  WHERE bp.period_start < m_end AND bp.period_end > m_start AND NOT (bp.period_start <= m_start AND bp.period_end >= m_end)
    AND (l.spent <> 0 OR l.held <> 0);

  -- The partitions go whole: no row is deleted one by one (decisions §18).
  PERFORM set_config('spendgate.moving_rows', 'on', true);
  FOR part IN SELECT * FROM spendgate_month_partitions(p_month) LOOP
    EXECUTE format('DROP TABLE %I', part.partition_name);
  END LOOP;
  INSERT INTO task SELECT * FROM archive_kept;
  INSERT INTO charge_line SELECT * FROM archive_kept_lines;
  PERFORM set_config('spendgate.moving_rows', '', true);
  SELECT count(*)::int INTO kept FROM archive_kept;

  INSERT INTO archived_month (month, archived_by, task_ids, manifest) VALUES (p_month, p_by, ids, p_manifest || jsonb_build_object('keptTasks', kept));
  RETURN kept;
END $function$;

COMMENT ON FUNCTION public.spendgate_archive_month(p_month date, p_by text, p_manifest jsonb) IS 'The database''s half of `spendgate archive YYYY-MM` (decisions §18), after the files are written and read back: for a closed month, keeps what budgets need of its entries (archived_spend by who, archived_balance for periods that held part of it), moves the tasks still open, posted to later or awaiting a person (under review, or named by an open vendor difference) to the default partition, drops the month''s partitions of task, charge_line and ledger_entry, and records the month as archived with its manifest. Answers how many tasks were kept.';
