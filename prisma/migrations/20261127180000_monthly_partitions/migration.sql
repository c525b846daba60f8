-- Years of history (decisions §18): the tables that grow with tasks become monthly range
-- partitions, so that a closed month can leave the database whole (archived to Parquet, its
-- partitions detached and dropped) instead of by DELETE, and so that no index grows forever.
--
--   task, charge_line   by RANGE (id) / (task_id). A new task's id carries its month of acceptance
--                       in its high bits (spendgate_new_task_id: month index << 40 | sequence), so a
--                       look-up by id (every settlement, poll and ledger join) prunes to one
--                       partition, and a task's charge lines sit in its month beside it. Ids given
--                       before this migration are below 2^40: each month of them becomes its own
--                       partition over the id range it used (`task_y2026m10_before`).
--   ledger_entry        by RANGE (effective_at): a month's entries are what its close, statements
--                       and seals cover.
--   spend_hourly        by RANGE (hour): the hourly roll-up (anomaly baselines) ages out by month.
--
-- Each has a DEFAULT partition, so that a missing partition never refuses a write; partitions are
-- made ahead by spendgate_make_partitions (migrate and, at start and daily, whichever instance
-- holds its lock) and a default's rows are moved into a month's partition when it is made.
--
-- charge_line keeps no foreign key to task: a key between partitioned tables pins every move of a
-- partition (archive, restore, a default's rows moved); charge lines are written only by
-- spendgate_settle, for the task it settles, and are fixed from then on (charge_line_fixed).
--
-- Uniqueness that no longer fits a partitioned index moves to two small tables of keys, written
-- beside the task: task_idempotency (a project's Idempotency-Key, freed when a refusal releases
-- it) and task_upstream (the vendor's task id). Both outlive an archived month, so a key stays used
-- and a vendor id still names its (archived) task.
--
-- The data is copied once (a 1M-task database: see docs/operations.md "History and retention" for
-- the time and what a gateway sees while it runs).

-- A month's index (months since January 1970, UTC) is spendgate_month_index's expression, written
-- out here and in the id's default because a migration does not define functions (their files do,
-- after every migration).
-- Two functions take a task row; they go with the old table and their files make them again.
DROP FUNCTION spendgate_rollup_add(task, text, "Exactness", numeric, jsonb, timestamptz);
DROP FUNCTION spendgate_task_post_at(task);
ALTER SEQUENCE task_id_seq OWNED BY NONE;
ALTER SEQUENCE ledger_entry_id_seq OWNED BY NONE;
DROP VIEW task_line;
ALTER TABLE charge_line DROP CONSTRAINT charge_line_task_id_fkey;

-- The old tables step aside under other names (their constraints' and indexes' names too).
ALTER TABLE task RENAME TO task_before_partitions;
ALTER TABLE charge_line RENAME TO charge_line_before_partitions;
ALTER TABLE ledger_entry RENAME TO ledger_entry_before_partitions;
ALTER TABLE spend_hourly RENAME TO spend_hourly_before_partitions;
DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT c.conname, c.conrelid::regclass AS rel FROM pg_constraint c
           WHERE c.conrelid IN ('task_before_partitions'::regclass, 'charge_line_before_partitions'::regclass,
                                'ledger_entry_before_partitions'::regclass, 'spend_hourly_before_partitions'::regclass)
             AND c.contype IN ('p', 'u', 'c', 'f') LOOP
    EXECUTE format('ALTER TABLE %s RENAME CONSTRAINT %I TO %I', r.rel, r.conname, 'old_' || r.conname);
  END LOOP;
  FOR r IN SELECT i.indexrelid::regclass AS idx, ic.relname FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
           WHERE i.indrelid IN ('task_before_partitions'::regclass, 'charge_line_before_partitions'::regclass,
                                'ledger_entry_before_partitions'::regclass, 'spend_hourly_before_partitions'::regclass)
             AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid) LOOP
    EXECUTE format('ALTER INDEX %s RENAME TO %I', r.idx, 'old_' || r.relname);
  END LOOP;
END $$;

CREATE TABLE task (LIKE task_before_partitions INCLUDING DEFAULTS INCLUDING GENERATED) PARTITION BY RANGE (id);
ALTER TABLE task ALTER COLUMN id SET DEFAULT
  ((((extract(year FROM CURRENT_TIMESTAMP AT TIME ZONE 'UTC') - 1970) * 12 + extract(month FROM CURRENT_TIMESTAMP AT TIME ZONE 'UTC') - 1)::bigint << 40)
   + nextval('task_id_seq'));
ALTER TABLE task ADD CONSTRAINT task_pkey PRIMARY KEY (id);
ALTER TABLE task ADD CONSTRAINT task_resolution_known CHECK ((resolution IS NULL) OR (resolution = ANY (ARRAY['CHARGE'::text, 'RELEASE'::text])));

CREATE TABLE charge_line (LIKE charge_line_before_partitions INCLUDING DEFAULTS) PARTITION BY RANGE (task_id);
ALTER TABLE charge_line ADD CONSTRAINT charge_line_pkey PRIMARY KEY (task_id, stage, seq);
ALTER TABLE charge_line ADD CONSTRAINT charge_line_charge_only CHECK (stage = 'charge'::text);

CREATE TABLE ledger_entry (LIKE ledger_entry_before_partitions INCLUDING DEFAULTS) PARTITION BY RANGE (effective_at);
ALTER TABLE ledger_entry ADD CONSTRAINT ledger_entry_pkey PRIMARY KEY (id, effective_at);
ALTER TABLE ledger_entry ADD CONSTRAINT ledger_entry_effective_in_epoch
  CHECK ((effective_at >= '1970-01-01 00:00:00+00'::timestamptz) AND (effective_at < '10000-01-01 00:00:00+00'::timestamptz));

CREATE TABLE spend_hourly (LIKE spend_hourly_before_partitions INCLUDING DEFAULTS) PARTITION BY RANGE (hour);
ALTER TABLE spend_hourly ADD CONSTRAINT spend_hourly_pkey PRIMARY KEY (hour, dimension, project_id, value, unit);

CREATE TABLE task_default PARTITION OF task DEFAULT;
CREATE TABLE charge_line_default PARTITION OF charge_line DEFAULT;
CREATE TABLE ledger_entry_default PARTITION OF ledger_entry DEFAULT;
CREATE TABLE spend_hourly_default PARTITION OF spend_hourly DEFAULT;

-- The months of ids given before: month m's range starts at the first id accepted in it (ids and
-- acceptance times rise together; at a month's edge, a task a few microseconds out of order stays
-- with the ids around it).
DO $$
DECLARE
  r record;
  suffix text;
BEGIN
  FOR r IN
    WITH firsts AS (
      SELECT date_trunc('month', accepted_at AT TIME ZONE 'UTC')::date AS month, min(id) AS first_id
      FROM task_before_partitions GROUP BY 1
    ), ordered AS (
      SELECT month, max(first_id) OVER (ORDER BY month ROWS UNBOUNDED PRECEDING) AS lo FROM firsts
    )
    SELECT month, lo, CASE WHEN row_number() OVER (ORDER BY month) = 1 THEN 'MINVALUE' ELSE lo::text END AS lo_text,
           coalesce(lead(lo) OVER (ORDER BY month), 1::bigint << 40) AS hi
    FROM ordered
  LOOP
    CONTINUE WHEN r.lo >= r.hi;
    suffix := to_char(r.month, '"y"YYYY"m"MM') || '_before';
    EXECUTE format('CREATE TABLE %I PARTITION OF task FOR VALUES FROM (%s) TO (%s)', 'task_' || suffix, r.lo_text, r.hi);
    EXECUTE format('CREATE TABLE %I PARTITION OF charge_line FOR VALUES FROM (%s) TO (%s)', 'charge_line_' || suffix, r.lo_text, r.hi);
  END LOOP;
END $$;

-- The months that hold entries and hourly figures, as spendgate_make_partitions makes them.
DO $$
DECLARE
  m date;
  suffix text;
  i bigint;
BEGIN
  FOR m IN SELECT DISTINCT date_trunc('month', effective_at AT TIME ZONE 'UTC')::date FROM ledger_entry_before_partitions
           UNION SELECT date_trunc('month', now() AT TIME ZONE 'UTC')::date LOOP
    suffix := to_char(m, '"y"YYYY"m"MM');
    EXECUTE format('CREATE TABLE %I PARTITION OF ledger_entry FOR VALUES FROM (%L) TO (%L)', 'ledger_entry_' || suffix,
                   (m::timestamp AT TIME ZONE 'UTC'), ((m + interval '1 month')::timestamp AT TIME ZONE 'UTC'));
  END LOOP;
  FOR m IN SELECT DISTINCT date_trunc('month', hour AT TIME ZONE 'UTC')::date FROM spend_hourly_before_partitions
           UNION SELECT date_trunc('month', now() AT TIME ZONE 'UTC')::date LOOP
    suffix := to_char(m, '"y"YYYY"m"MM');
    EXECUTE format('CREATE TABLE %I PARTITION OF spend_hourly FOR VALUES FROM (%L) TO (%L)', 'spend_hourly_' || suffix,
                   (m::timestamp AT TIME ZONE 'UTC'), ((m + interval '1 month')::timestamp AT TIME ZONE 'UTC'));
  END LOOP;
  -- The month now, for the ids given from here on.
  m := date_trunc('month', now() AT TIME ZONE 'UTC')::date;
  suffix := to_char(m, '"y"YYYY"m"MM');
  i := (extract(year FROM m) - 1970) * 12 + extract(month FROM m) - 1;
  EXECUTE format('CREATE TABLE %I PARTITION OF task FOR VALUES FROM (%s) TO (%s)', 'task_' || suffix, i << 40, (i + 1) << 40);
  EXECUTE format('CREATE TABLE %I PARTITION OF charge_line FOR VALUES FROM (%s) TO (%s)', 'charge_line_' || suffix, i << 40, (i + 1) << 40);
END $$;

INSERT INTO task SELECT * FROM task_before_partitions;
INSERT INTO charge_line SELECT * FROM charge_line_before_partitions;
INSERT INTO ledger_entry SELECT * FROM ledger_entry_before_partitions;
INSERT INTO spend_hourly SELECT * FROM spend_hourly_before_partitions;

CREATE TABLE task_idempotency (
  project_id uuid NOT NULL,
  idempotency_key text NOT NULL,
  task_id bigint NOT NULL,
  CONSTRAINT task_idempotency_pkey PRIMARY KEY (project_id, idempotency_key)
);
INSERT INTO task_idempotency SELECT project_id, idempotency_key, id FROM task_before_partitions WHERE idempotency_key IS NOT NULL;
CREATE TABLE task_upstream (
  upstream_task_id bigint NOT NULL,
  task_id bigint NOT NULL,
  project_id uuid NOT NULL,
  CONSTRAINT task_upstream_pkey PRIMARY KEY (upstream_task_id)
);
INSERT INTO task_upstream SELECT upstream_task_id, id, project_id FROM task_before_partitions WHERE upstream_task_id IS NOT NULL;

DROP TABLE task_before_partitions, charge_line_before_partitions, ledger_entry_before_partitions, spend_hourly_before_partitions;

-- Indexes after the copy (one build each, not a row at a time).
ALTER TABLE task ADD CONSTRAINT task_project_id_fkey FOREIGN KEY (project_id) REFERENCES project(id) ON UPDATE CASCADE ON DELETE RESTRICT;
CREATE INDEX task_due_for_poll ON task USING btree (next_poll_at) WHERE (status = 'processing'::"TaskStatus");
CREATE INDEX task_end_user_project ON task USING btree (end_user, project_id) WHERE (end_user IS NOT NULL);
CREATE INDEX task_needs_review ON task USING btree (id DESC) WHERE needs_review;
CREATE INDEX task_project_id_accepted_at_idx ON task USING btree (project_id, accepted_at);
CREATE INDEX task_submitting_since ON task USING btree (updated_at) WHERE (status = 'submitting'::"TaskStatus");
CREATE INDEX task_under_review ON task USING btree (project_id, accepted_at) WHERE (needs_review AND (settled_at IS NULL));
CREATE INDEX ledger_entry_project_id_unit_effective_at_idx ON ledger_entry USING btree (project_id, unit, effective_at);
CREATE INDEX ledger_entry_task_id_idx ON ledger_entry USING btree (task_id);
CREATE INDEX spend_hourly_scope ON spend_hourly USING btree (dimension, project_id, value, unit, hour);

-- "Once per task, kind and month" cannot be a unique index of the partitioned table (it would have
-- to hold effective_at itself); each partition carries it (spendgate_make_partitions adds it).
DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'ledger_entry'::regclass LOOP
    EXECUTE format($f$CREATE UNIQUE INDEX %I ON %I USING btree (task_id, kind, date_trunc('month'::text, (effective_at AT TIME ZONE 'UTC'::text)))
                      WHERE ((task_id IS NOT NULL) AND (kind = ANY (ARRAY['hold'::"LedgerKind", 'release'::"LedgerKind", 'charge'::"LedgerKind"])))$f$,
                   r.relname || '_once', r.relname);
  END LOOP;
END $$;

CREATE TRIGGER charge_line_fixed BEFORE DELETE OR UPDATE ON charge_line FOR EACH ROW EXECUTE FUNCTION spendgate_charge_line_fixed();
CREATE TRIGGER charge_line_no_truncate BEFORE TRUNCATE ON charge_line FOR EACH STATEMENT EXECUTE FUNCTION spendgate_charge_line_fixed();
CREATE TRIGGER ledger_entry_append_only BEFORE DELETE OR UPDATE ON ledger_entry FOR EACH ROW EXECUTE FUNCTION spendgate_ledger_append_only();
CREATE TRIGGER ledger_entry_no_truncate BEFORE TRUNCATE ON ledger_entry FOR EACH STATEMENT EXECUTE FUNCTION spendgate_ledger_append_only();
CREATE TRIGGER ledger_entry_open_month BEFORE INSERT ON ledger_entry FOR EACH ROW
  WHEN (new.effective_at < (date_trunc('month'::text, (statement_timestamp() AT TIME ZONE 'UTC'::text)) AT TIME ZONE 'UTC'::text))
  EXECUTE FUNCTION spendgate_ledger_open_month();
CREATE TRIGGER task_events AFTER UPDATE OF overrun, needs_review ON task FOR EACH ROW
  WHEN (new.overrun IS NOT NULL AND old.overrun IS NULL OR new.needs_review AND NOT old.needs_review) EXECUTE FUNCTION spendgate_task_event();
CREATE TRIGGER task_events_on_insert AFTER INSERT ON task FOR EACH ROW WHEN (new.needs_review OR new.overrun IS NOT NULL) EXECUTE FUNCTION spendgate_task_event();
CREATE TRIGGER task_quote_fixed BEFORE UPDATE OF project_id, unit, accepted_at, price_basis, price_book_version, exactness, estimate_amount,
  estimate_tier, estimate_warnings, estimate_lines, hold_amount ON task FOR EACH ROW EXECUTE FUNCTION spendgate_task_quote_fixed();

CREATE VIEW task_line AS
 SELECT t.id AS task_id, 'estimate'::text AS stage, l.seq::integer AS seq, l.component, l.quantity, l.rate, l.per, l.amount
   FROM task t CROSS JOIN LATERAL unnest(t.estimate_lines) WITH ORDINALITY l(component, quantity, rate, per, amount, seq)
UNION ALL
 SELECT c.task_id, c.stage, c.seq, c.component, c.quantity, c.rate, c.per, c.amount FROM charge_line c;

-- The months archived (spendgate archive): where their files are, what they held, and the task
-- ids their partitions covered (a look-up of such a task answers that it is archived).
CREATE TABLE archived_month (
  month date NOT NULL,
  archived_at timestamptz(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  archived_by text NOT NULL,
  task_ids int8multirange NOT NULL,
  manifest jsonb NOT NULL,
  CONSTRAINT archived_month_pkey PRIMARY KEY (month),
  CONSTRAINT archived_month_first_day CHECK (month = date_trunc('month', month)::date)
);

-- What an archived month's ledger entries add to budget balances, kept when its partitions go
-- (decisions §18): by whom the entries were made (the task's key, end user and tags; none for an
-- entry without a task), so that a balance over a window holding the whole month (lifetime,
-- that month) is still exact, for a budget or an end user seen for the first time too.
CREATE TABLE archived_spend (
  month date NOT NULL,
  project_id uuid NOT NULL,
  unit "Unit" NOT NULL,
  has_task boolean NOT NULL,
  api_key_id uuid,
  end_user text,
  tags text[] NOT NULL,
  spent numeric NOT NULL,
  held numeric NOT NULL
);
CREATE INDEX archived_spend_project ON archived_spend USING btree (project_id, unit, month);
-- ...and for a balance whose window holds only part of the month (a day, a week), what the month
-- added to it, as it stood when the month was archived (those periods had ended).
CREATE TABLE archived_balance (
  month date NOT NULL,
  budget_id uuid NOT NULL,
  period_start timestamptz(6) NOT NULL,
  subject text NOT NULL,
  spent numeric NOT NULL,
  held numeric NOT NULL,
  CONSTRAINT archived_balance_pkey PRIMARY KEY (budget_id, period_start, subject, month)
);

-- The functions that write tasks and keys are applied again from their files.
DO $$ BEGIN
  IF to_regclass('"_spendgate_functions"') IS NOT NULL THEN
    DELETE FROM "_spendgate_functions";
  END IF;
END $$;
