-- CreateEnum
CREATE TYPE "ModelScope" AS ENUM ('MODEL', 'FAMILY', 'KIND');

-- AlterTable
ALTER TABLE "budget" ADD COLUMN     "model_scope" "ModelScope",
ADD COLUMN     "model_value" TEXT;

-- AlterTable
ALTER TABLE "archived_spend" ADD COLUMN     "family" TEXT,
ADD COLUMN     "kind" TEXT,
ADD COLUMN     "model" TEXT;

-- Hand-written: a model scope names its value, and only with one.
ALTER TABLE "budget" ADD CONSTRAINT "budget_model_scope_value" CHECK (("model_scope" IS NULL) = ("model_value" IS NULL));

-- Hand-written: spendgate_budget_subject and spendgate_apply_to_budgets take the task's model,
-- family and kind (decisions §20); their files create them again with the new arguments.
DROP FUNCTION IF EXISTS spendgate_budget_subject("BudgetScope", uuid, text, boolean, uuid, text, text[]);
DROP FUNCTION IF EXISTS spendgate_apply_to_budgets(uuid, "Unit", boolean, uuid, text, text[], timestamp with time zone, numeric, numeric);
