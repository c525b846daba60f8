-- CreateEnum
CREATE TYPE "LimitKind" AS ENUM ('REQUESTS_PER_MINUTE', 'TASKS_IN_FLIGHT', 'TOKENS_PER_MINUTE');

-- CreateTable
CREATE TABLE "usage_limit" (
    "id" UUID NOT NULL,
    "project_id" UUID NOT NULL,
    "kind" "LimitKind" NOT NULL,
    "amount" BIGINT NOT NULL,
    "scope" "BudgetScope" NOT NULL DEFAULT 'PROJECT',
    "scope_key_id" UUID,
    "scope_value" TEXT,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_by" TEXT NOT NULL,

    CONSTRAINT "usage_limit_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "limit_use" (
    "limit_id" UUID NOT NULL,
    "subject" TEXT NOT NULL,
    "window_start" TIMESTAMPTZ(6) NOT NULL,
    "used" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "limit_use_pkey" PRIMARY KEY ("limit_id","subject")
);

-- CreateTable
CREATE TABLE "limit_hold" (
    "task_id" BIGINT NOT NULL,
    "limit_id" UUID NOT NULL,
    "subject" TEXT NOT NULL,
    "window_start" TIMESTAMPTZ(6),
    "tokens" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "limit_hold_pkey" PRIMARY KEY ("task_id","limit_id")
);

-- CreateIndex
CREATE INDEX "usage_limit_project_id_idx" ON "usage_limit"("project_id");

-- CreateIndex
CREATE INDEX "limit_hold_limit_id_subject_idx" ON "limit_hold"("limit_id", "subject");

-- AddForeignKey
ALTER TABLE "usage_limit" ADD CONSTRAINT "usage_limit_project_id_fkey" FOREIGN KEY ("project_id") REFERENCES "project"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "usage_limit" ADD CONSTRAINT "usage_limit_scope_key_id_fkey" FOREIGN KEY ("scope_key_id") REFERENCES "api_key"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "limit_use" ADD CONSTRAINT "limit_use_limit_id_fkey" FOREIGN KEY ("limit_id") REFERENCES "usage_limit"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "limit_hold" ADD CONSTRAINT "limit_hold_limit_id_fkey" FOREIGN KEY ("limit_id") REFERENCES "usage_limit"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Hand-written: a limit's amount is a whole number above zero (the API refuses the rest first).
ALTER TABLE "usage_limit" ADD CONSTRAINT "usage_limit_amount_positive" CHECK ("amount" > 0);

-- Hand-written: one limit per project, kind and scope (setLimit changes its amount).
CREATE UNIQUE INDEX "usage_limit_one_per_scope" ON "usage_limit" ("project_id", "kind", "scope", coalesce("scope_key_id"::text, ''), coalesce("scope_value", ''));
