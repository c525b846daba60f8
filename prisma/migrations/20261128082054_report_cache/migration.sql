-- CreateTable
CREATE TABLE "books_change" (
    "month" DATE NOT NULL,
    "project_id" UUID NOT NULL,
    "version" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "books_change_pkey" PRIMARY KEY ("month","project_id")
);

-- CreateTable
CREATE TABLE "books_epoch" (
    "id" BOOLEAN NOT NULL DEFAULT true,
    "version" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "books_epoch_pkey" PRIMARY KEY ("id")
);

-- Hand-written (decisions §22): the epoch's one row; the triggers that keep the counters. Their functions are
-- in prisma/functions (the runner applies a missing one before a migration that names it).
ALTER TABLE books_epoch ADD CONSTRAINT books_epoch_one_row CHECK (id);
INSERT INTO books_epoch (id, version) VALUES (true, 0);
CREATE TRIGGER spend_rollup_books_changed AFTER INSERT OR UPDATE ON spend_rollup
  FOR EACH ROW EXECUTE FUNCTION spendgate_books_changed();
CREATE TRIGGER project_books_epoch AFTER DELETE OR UPDATE OF name ON project
  FOR EACH STATEMENT EXECUTE FUNCTION spendgate_books_epoch();
CREATE TRIGGER api_key_books_epoch AFTER DELETE OR UPDATE OF name, prefix ON api_key
  FOR EACH STATEMENT EXECUTE FUNCTION spendgate_books_epoch();
CREATE TRIGGER commitment_books_epoch AFTER INSERT OR DELETE OR UPDATE ON commitment
  FOR EACH STATEMENT EXECUTE FUNCTION spendgate_books_epoch();
