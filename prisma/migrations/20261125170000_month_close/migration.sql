-- AlterTable
ALTER TABLE "ledger_entry" ADD COLUMN     "belongs_to" DATE;

-- CreateTable
CREATE TABLE "month_close" (
    "id" BIGSERIAL NOT NULL,
    "month" DATE NOT NULL,
    "closed_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "closed_by" TEXT NOT NULL,
    "last_entry_id" BIGINT NOT NULL,
    "carried_tasks" INTEGER NOT NULL,
    "reopened_at" TIMESTAMPTZ(6),
    "reopened_by" TEXT,
    "reopen_reason" TEXT,

    CONSTRAINT "month_close_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "statement" (
    "id" BIGSERIAL NOT NULL,
    "close_id" BIGINT NOT NULL,
    "project_id" UUID NOT NULL,
    "month" DATE NOT NULL,
    "ledger_digest" BYTEA NOT NULL,
    "entries" INTEGER NOT NULL,
    "body" JSONB NOT NULL,
    "csv" TEXT NOT NULL,
    "pdf" BYTEA NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "statement_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ledger_seal" (
    "seq" BIGINT NOT NULL,
    "first_id" BIGINT NOT NULL,
    "last_id" BIGINT NOT NULL,
    "entry_ids" BIGINT[],
    "digests" BYTEA NOT NULL,
    "prev_hash" BYTEA NOT NULL,
    "hash" BYTEA NOT NULL,
    "sealed_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ledger_seal_pkey" PRIMARY KEY ("seq")
);

-- CreateTable
CREATE TABLE "ledger_seal_mark" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "max_id" BIGINT NOT NULL,
    "marked_at" TIMESTAMPTZ(6) NOT NULL,

    CONSTRAINT "ledger_seal_mark_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "statement_project_id_month_idx" ON "statement"("project_id", "month");

-- CreateIndex
CREATE UNIQUE INDEX "statement_close_id_project_id_key" ON "statement"("close_id", "project_id");

-- AddForeignKey
ALTER TABLE "statement" ADD CONSTRAINT "statement_close_id_fkey" FOREIGN KEY ("close_id") REFERENCES "month_close"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
