-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateEnum
CREATE TYPE "Unit" AS ENUM ('CREDITS', 'USD');

-- CreateEnum
CREATE TYPE "Period" AS ENUM ('DAILY', 'WEEKLY', 'MONTHLY', 'LIFETIME');

-- CreateEnum
CREATE TYPE "TaskStatus" AS ENUM ('submitting', 'processing', 'ready', 'failed', 'unknown', 'rejected');

-- CreateEnum
CREATE TYPE "Exactness" AS ENUM ('EXACT', 'ESTIMATE', 'UNPRICED');

-- CreateEnum
CREATE TYPE "LedgerKind" AS ENUM ('hold', 'release', 'charge', 'adjustment');

-- CreateEnum
CREATE TYPE "UnpricedPolicy" AS ENUM ('block', 'allow');

-- CreateEnum
CREATE TYPE "FailurePolicy" AS ENUM ('release', 'charge');

-- CreateTable
CREATE TABLE "project" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "unpriced_policy" "UnpricedPolicy" NOT NULL DEFAULT 'block',
    "failure_policy" "FailurePolicy" NOT NULL DEFAULT 'release',
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "project_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_key" (
    "id" UUID NOT NULL,
    "project_id" UUID NOT NULL,
    "prefix" TEXT NOT NULL,
    "hash" BYTEA NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(6),

    CONSTRAINT "api_key_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "price_book_version" (
    "version" INTEGER NOT NULL,
    "effective_at" TIMESTAMPTZ(6) NOT NULL,
    "published_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "note" TEXT,

    CONSTRAINT "price_book_version_pkey" PRIMARY KEY ("version")
);

-- CreateTable
CREATE TABLE "price_rate" (
    "id" BIGSERIAL NOT NULL,
    "version" INTEGER NOT NULL,
    "model" TEXT NOT NULL,
    "unit" "Unit" NOT NULL,
    "component" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "tier" TEXT,
    "tier_max_input" INTEGER,
    "rate" DECIMAL NOT NULL,

    CONSTRAINT "price_rate_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "budget" (
    "id" UUID NOT NULL,
    "project_id" UUID NOT NULL,
    "unit" "Unit" NOT NULL,
    "limit" DECIMAL NOT NULL,
    "period" "Period" NOT NULL,
    "hard" BOOLEAN NOT NULL,
    "thresholds" INTEGER[] DEFAULT ARRAY[50, 80, 100]::INTEGER[],
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deleted_at" TIMESTAMPTZ(6),

    CONSTRAINT "budget_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "budget_period" (
    "budget_id" UUID NOT NULL,
    "period_start" TIMESTAMPTZ(6) NOT NULL,
    "period_end" TIMESTAMPTZ(6) NOT NULL,
    "spent" DECIMAL NOT NULL DEFAULT 0,
    "held" DECIMAL NOT NULL DEFAULT 0,

    CONSTRAINT "budget_period_pkey" PRIMARY KEY ("budget_id","period_start")
);

-- CreateTable
CREATE TABLE "budget_alert" (
    "id" BIGSERIAL NOT NULL,
    "budget_id" UUID NOT NULL,
    "period_start" TIMESTAMPTZ(6) NOT NULL,
    "threshold" INTEGER NOT NULL,
    "used_amount" DECIMAL NOT NULL,
    "crossed_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "budget_alert_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "task" (
    "id" BIGSERIAL NOT NULL,
    "project_id" UUID NOT NULL,
    "api_key_id" UUID,
    "model" TEXT NOT NULL,
    "family" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "unit" "Unit" NOT NULL,
    "status" "TaskStatus" NOT NULL,
    "upstream_id" TEXT,
    "upstream_task_id" BIGINT,
    "price_basis" JSONB NOT NULL,
    "price_book_version" INTEGER NOT NULL,
    "exactness" "Exactness" NOT NULL,
    "estimate_amount" DECIMAL NOT NULL,
    "estimate_tier" TEXT,
    "estimate_warnings" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "hold_amount" DECIMAL NOT NULL,
    "charge_amount" DECIMAL,
    "charge_exactness" "Exactness",
    "charge_tier" TEXT,
    "charge_warnings" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "usage" JSONB,
    "needs_review" BOOLEAN NOT NULL DEFAULT false,
    "review_reason" TEXT,
    "idempotency_key" TEXT,
    "request_hash" TEXT,
    "response_body" TEXT,
    "accepted_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "submitted_at" TIMESTAMPTZ(6),
    "settled_at" TIMESTAMPTZ(6),
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "next_poll_at" TIMESTAMPTZ(6),
    "poll_attempts" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "task_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "charge_line" (
    "task_id" BIGINT NOT NULL,
    "stage" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "component" TEXT NOT NULL,
    "quantity" DECIMAL NOT NULL,
    "rate" DECIMAL NOT NULL,
    "per" DECIMAL NOT NULL,
    "amount" DECIMAL NOT NULL,

    CONSTRAINT "charge_line_pkey" PRIMARY KEY ("task_id","stage","seq")
);

-- CreateTable
CREATE TABLE "ledger_entry" (
    "id" BIGSERIAL NOT NULL,
    "project_id" UUID NOT NULL,
    "task_id" BIGINT,
    "kind" "LedgerKind" NOT NULL,
    "unit" "Unit" NOT NULL,
    "amount" DECIMAL NOT NULL,
    "effective_at" TIMESTAMPTZ(6) NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "reason" TEXT,

    CONSTRAINT "ledger_entry_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "spend_rollup" (
    "day" DATE NOT NULL,
    "project_id" UUID NOT NULL,
    "model" TEXT NOT NULL,
    "unit" "Unit" NOT NULL,
    "status" TEXT NOT NULL,
    "tasks" INTEGER NOT NULL DEFAULT 0,
    "unpriced_tasks" INTEGER NOT NULL DEFAULT 0,
    "amount" DECIMAL NOT NULL DEFAULT 0,
    "input_tokens" BIGINT NOT NULL DEFAULT 0,
    "output_tokens" BIGINT NOT NULL DEFAULT 0,
    "cache_read_tokens" BIGINT NOT NULL DEFAULT 0,
    "cache_write_5m_tokens" BIGINT NOT NULL DEFAULT 0,
    "cache_write_1h_tokens" BIGINT NOT NULL DEFAULT 0,
    "cache_write_tokens" BIGINT NOT NULL DEFAULT 0,
    "video_seconds" DECIMAL NOT NULL DEFAULT 0,
    "images" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "spend_rollup_pkey" PRIMARY KEY ("day","project_id","model","unit","status")
);

-- CreateIndex
CREATE UNIQUE INDEX "project_name_key" ON "project"("name");

-- CreateIndex
CREATE UNIQUE INDEX "api_key_prefix_key" ON "api_key"("prefix");

-- CreateIndex
CREATE INDEX "api_key_project_id_idx" ON "api_key"("project_id");

-- CreateIndex
CREATE UNIQUE INDEX "price_rate_version_model_component_key_tier_key" ON "price_rate"("version", "model", "component", "key", "tier");

-- CreateIndex
CREATE INDEX "budget_project_id_unit_idx" ON "budget"("project_id", "unit");

-- CreateIndex
CREATE UNIQUE INDEX "budget_alert_budget_id_period_start_threshold_key" ON "budget_alert"("budget_id", "period_start", "threshold");

-- CreateIndex
CREATE UNIQUE INDEX "task_upstream_task_id_key" ON "task"("upstream_task_id");

-- CreateIndex
CREATE INDEX "task_project_id_accepted_at_idx" ON "task"("project_id", "accepted_at");

-- CreateIndex
CREATE INDEX "ledger_entry_project_id_unit_effective_at_idx" ON "ledger_entry"("project_id", "unit", "effective_at");

-- CreateIndex
CREATE INDEX "ledger_entry_task_id_idx" ON "ledger_entry"("task_id");

-- AddForeignKey
ALTER TABLE "api_key" ADD CONSTRAINT "api_key_project_id_fkey" FOREIGN KEY ("project_id") REFERENCES "project"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "price_rate" ADD CONSTRAINT "price_rate_version_fkey" FOREIGN KEY ("version") REFERENCES "price_book_version"("version") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "budget" ADD CONSTRAINT "budget_project_id_fkey" FOREIGN KEY ("project_id") REFERENCES "project"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "budget_period" ADD CONSTRAINT "budget_period_budget_id_fkey" FOREIGN KEY ("budget_id") REFERENCES "budget"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "task" ADD CONSTRAINT "task_project_id_fkey" FOREIGN KEY ("project_id") REFERENCES "project"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "charge_line" ADD CONSTRAINT "charge_line_task_id_fkey" FOREIGN KEY ("task_id") REFERENCES "task"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
