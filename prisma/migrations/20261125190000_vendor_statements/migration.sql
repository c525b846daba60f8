-- CreateTable
CREATE TABLE "vendor_statement" (
    "id" UUID NOT NULL,
    "imported_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "imported_by" TEXT NOT NULL,
    "file_digest" BYTEA NOT NULL,
    "rows" INTEGER NOT NULL,
    "repeated" INTEGER NOT NULL,
    "period_from" TIMESTAMPTZ(6),
    "period_to" TIMESTAMPTZ(6),
    "summary" JSONB NOT NULL,

    CONSTRAINT "vendor_statement_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "vendor_statement_line" (
    "statement_id" UUID NOT NULL,
    "line_no" INTEGER NOT NULL,
    "vendor_task_id" BIGINT NOT NULL,
    "model" TEXT,
    "billed_at" TIMESTAMPTZ(6) NOT NULL,
    "unit" "Unit" NOT NULL,
    "amount" DECIMAL NOT NULL,

    CONSTRAINT "vendor_statement_line_pkey" PRIMARY KEY ("statement_id","line_no")
);

-- CreateTable
CREATE TABLE "vendor_recon_item" (
    "id" BIGSERIAL NOT NULL,
    "statement_id" UUID NOT NULL,
    "class" TEXT NOT NULL,
    "vendor_task_id" BIGINT,
    "task_id" BIGINT,
    "project_id" UUID,
    "model" TEXT,
    "unit" "Unit" NOT NULL,
    "ours" DECIMAL,
    "theirs" DECIMAL,
    "difference" DECIMAL,
    "state" TEXT NOT NULL DEFAULT 'open',
    "note" TEXT,
    "resolved_by" TEXT,
    "resolved_at" TIMESTAMPTZ(6),
    "entry_id" BIGINT,

    CONSTRAINT "vendor_recon_item_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "vendor_statement_file_digest_key" ON "vendor_statement"("file_digest");

-- CreateIndex
CREATE INDEX "vendor_statement_line_vendor_task_id_idx" ON "vendor_statement_line"("vendor_task_id");

-- CreateIndex
CREATE INDEX "vendor_recon_item_statement_id_class_idx" ON "vendor_recon_item"("statement_id", "class");

-- CreateIndex
CREATE INDEX "vendor_recon_item_task_id_idx" ON "vendor_recon_item"("task_id");

-- AddForeignKey
ALTER TABLE "vendor_statement_line" ADD CONSTRAINT "vendor_statement_line_statement_id_fkey" FOREIGN KEY ("statement_id") REFERENCES "vendor_statement"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "vendor_recon_item" ADD CONSTRAINT "vendor_recon_item_statement_id_fkey" FOREIGN KEY ("statement_id") REFERENCES "vendor_statement"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
