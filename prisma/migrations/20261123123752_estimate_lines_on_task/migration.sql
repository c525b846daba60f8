-- AlterTable
ALTER TABLE "task" ADD COLUMN     "estimate_lines" spendgate_line[] NOT NULL DEFAULT '{}'::spendgate_line[];
