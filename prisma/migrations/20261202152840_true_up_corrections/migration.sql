-- AlterTable
ALTER TABLE "commitment_true_up" DROP CONSTRAINT "commitment_true_up_pkey",
ADD CONSTRAINT "commitment_true_up_pkey" PRIMARY KEY ("ledger_entry_id");

-- CreateIndex
CREATE INDEX "commitment_true_up_commitment_id_month_idx" ON "commitment_true_up"("commitment_id", "month");
