-- CreateEnum
CREATE TYPE "BudgetScope" AS ENUM ('PROJECT', 'API_KEY', 'TAG', 'USER', 'EACH_USER');

-- DropIndex
DROP INDEX "budget_alert_budget_id_period_start_threshold_key";

-- AlterTable
ALTER TABLE "api_key" ADD COLUMN     "tags" TEXT[] DEFAULT ARRAY[]::TEXT[];

-- AlterTable
ALTER TABLE "budget" ADD COLUMN     "scope" "BudgetScope" NOT NULL DEFAULT 'PROJECT',
ADD COLUMN     "scope_key_id" UUID,
ADD COLUMN     "scope_value" TEXT;

-- AlterTable
ALTER TABLE "budget_period" DROP CONSTRAINT "budget_period_pkey",
ADD COLUMN     "subject" TEXT NOT NULL DEFAULT '',
ADD CONSTRAINT "budget_period_pkey" PRIMARY KEY ("budget_id", "period_start", "subject");

-- AlterTable
ALTER TABLE "budget_alert" ADD COLUMN     "subject" TEXT NOT NULL DEFAULT '';

-- AlterTable
ALTER TABLE "task" ADD COLUMN     "end_user" TEXT,
ADD COLUMN     "tags" TEXT[] DEFAULT ARRAY[]::TEXT[];

-- CreateTable
CREATE TABLE "spend_rollup_by" (
    "dimension" TEXT NOT NULL,
    "period" DATE NOT NULL,
    "project_id" UUID NOT NULL,
    "value" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "unit" "Unit" NOT NULL,
    "price_book_version" INTEGER NOT NULL,
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

    CONSTRAINT "spend_rollup_by_pkey" PRIMARY KEY ("dimension","period","project_id","value","model","unit","price_book_version")
);

-- CreateIndex
CREATE UNIQUE INDEX "budget_alert_budget_id_period_start_subject_threshold_key" ON "budget_alert"("budget_id", "period_start", "subject", "threshold");

-- AddForeignKey
ALTER TABLE "budget" ADD CONSTRAINT "budget_scope_key_id_fkey" FOREIGN KEY ("scope_key_id") REFERENCES "api_key"("id") ON DELETE SET NULL ON UPDATE CASCADE;
