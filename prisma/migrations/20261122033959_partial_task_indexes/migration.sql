-- DropIndex
DROP INDEX "task_status_next_poll_at_idx";

-- DropIndex
DROP INDEX "task_project_id_idempotency_key_key";
