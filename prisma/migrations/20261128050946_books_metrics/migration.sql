-- AlterTable
ALTER TABLE "spend_rollup" ADD COLUMN     "credit" DECIMAL NOT NULL DEFAULT 0,
ADD COLUMN     "first_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP;

-- Hand-written (decisions §21): a row whose adjustments netted below zero starts with that as its
-- credit, so amount + credit is never negative; from now on spendgate_adjust adds every negative
-- adjustment to credit. Rows made before this migration are born now (first_at's default).
UPDATE spend_rollup SET credit = -amount WHERE amount < 0;
