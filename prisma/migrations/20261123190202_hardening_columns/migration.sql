-- AlterTable
ALTER TABLE "project" ADD COLUMN     "chat_hold_multiplier" DECIMAL NOT NULL DEFAULT 1;

-- AlterTable
ALTER TABLE "task" ADD COLUMN     "overrun" DECIMAL,
ADD COLUMN     "resolution" TEXT,
ADD COLUMN     "resolution_reason" TEXT,
ADD COLUMN     "resolved_at" TIMESTAMPTZ(6),
ADD COLUMN     "response_status" INTEGER;
