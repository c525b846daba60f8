-- AlterTable
ALTER TABLE "charge_line" ADD COLUMN     "list_amount" DECIMAL,
ADD COLUMN     "list_rate" DECIMAL;

-- AlterTable
ALTER TABLE "spend_rollup_by" ADD COLUMN     "contract_discount" DECIMAL NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE "contract_term" (
    "id" BIGSERIAL NOT NULL,
    "version" INTEGER NOT NULL,
    "unit" "Unit" NOT NULL,
    "scope" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "discount_percent" DECIMAL,
    "component" TEXT,
    "tier" TEXT,
    "net_rate" DECIMAL,

    CONSTRAINT "contract_term_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "contract_term_version_idx" ON "contract_term"("version");

-- AddForeignKey
ALTER TABLE "contract_term" ADD CONSTRAINT "contract_term_version_fkey" FOREIGN KEY ("version") REFERENCES "price_book_version"("version") ON DELETE RESTRICT ON UPDATE CASCADE;
