-- CreateTable
CREATE TABLE "spend_rollup_user" (
    "period" DATE NOT NULL,
    "project_id" UUID NOT NULL,
    "value" TEXT NOT NULL,
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

    CONSTRAINT "spend_rollup_user_pkey" PRIMARY KEY ("period","project_id","value","unit")
);

-- CreateTable
CREATE TABLE "spend_rollup_user_all" (
    "period" DATE NOT NULL,
    "value" TEXT NOT NULL,
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

    CONSTRAINT "spend_rollup_user_all_pkey" PRIMARY KEY ("period","value","unit")
);

-- CreateIndex
CREATE INDEX "spend_rollup_user_top" ON "spend_rollup_user"("period", "unit", "amount" DESC);

-- CreateIndex
CREATE INDEX "spend_rollup_user_all_top" ON "spend_rollup_user_all"("period", "unit", "amount" DESC);
