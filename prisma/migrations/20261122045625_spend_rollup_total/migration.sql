-- CreateTable
CREATE TABLE "spend_rollup_total" (
    "day" DATE NOT NULL,
    "project_id" UUID NOT NULL,
    "model" TEXT NOT NULL,
    "unit" "Unit" NOT NULL,
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

    CONSTRAINT "spend_rollup_total_pkey" PRIMARY KEY ("day","project_id","model","unit")
);
