-- CreateTable
CREATE TABLE "commitment" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "project_id" UUID NOT NULL,
    "unit" "Unit" NOT NULL,
    "amount" DECIMAL NOT NULL,
    "starts_month" DATE NOT NULL,
    "ends_month" DATE,
    "rollover" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_by" TEXT NOT NULL,

    CONSTRAINT "commitment_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "commitment_true_up" (
    "commitment_id" UUID NOT NULL,
    "month" DATE NOT NULL,
    "unit" "Unit" NOT NULL,
    "amount" DECIMAL NOT NULL,
    "ledger_entry_id" BIGINT NOT NULL,

    CONSTRAINT "commitment_true_up_pkey" PRIMARY KEY ("commitment_id","month")
);

-- AddForeignKey
ALTER TABLE "commitment_true_up" ADD CONSTRAINT "commitment_true_up_commitment_id_fkey" FOREIGN KEY ("commitment_id") REFERENCES "commitment"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- Hand-written: what the rows may hold (decisions §19).
ALTER TABLE commitment
  ADD CONSTRAINT commitment_amount_positive CHECK (amount > 0),
  ADD CONSTRAINT commitment_months CHECK (starts_month = date_trunc('month', starts_month)::date
    AND (ends_month IS NULL OR (ends_month = date_trunc('month', ends_month)::date AND ends_month >= starts_month))),
  ADD CONSTRAINT commitment_rollover_ends CHECK (NOT rollover OR ends_month IS NOT NULL),
  ADD CONSTRAINT commitment_project_fkey FOREIGN KEY (project_id) REFERENCES project(id) ON DELETE RESTRICT;
ALTER TABLE commitment_true_up ADD CONSTRAINT commitment_true_up_positive CHECK (amount > 0);
