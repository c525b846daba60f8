-- The task table, leaner on the submission path (decisions §18; docs/architecture.md "The task
-- table's indexes"). The record of the vendor's acceptance changed status (in two partial indexes'
-- predicates) and next_poll_at (indexed): PostgreSQL wrote a new version of the row and an entry in
-- every index of the task. Now a task is held with its first poll's time and keeps it, and one
-- partial index over open tasks (settled_at IS NULL, which only settlement changes) serves the
-- poller, the sweeper of abandoned submissions and the release of unsent holds; with room on the
-- page (fillfactor 80, spendgate_partition_extras) the record rewrites the row in place (HOT).

-- Tasks held before this and not yet recorded: their first poll as the hold now writes it.
UPDATE task SET next_poll_at = accepted_at + interval '1 second' WHERE status = 'submitting' AND next_poll_at IS NULL;

CREATE INDEX task_open ON task USING btree (next_poll_at) WHERE settled_at IS NULL AND next_poll_at IS NOT NULL;
DROP INDEX task_due_for_poll;
DROP INDEX task_submitting_since;

-- No writer inserts a task already flagged for review or overrun (the hold functions write neither;
-- archive and restore move rows with the triggers off): the flags are set by UPDATE, and task_events
-- announces them.
DROP TRIGGER task_events_on_insert ON task;

DO $$
DECLARE
  p text;
BEGIN
  FOR p IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'task'::regclass LOOP
    EXECUTE format('ALTER TABLE %I SET (fillfactor = 80)', p);
  END LOOP;
END $$;
