-- CreateTable
CREATE TABLE "credit_price" (
    "version" SERIAL NOT NULL,
    "effective_month" DATE NOT NULL,
    "usd_per_credit" DECIMAL NOT NULL,
    "note" TEXT,
    "published_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "published_by" TEXT NOT NULL,

    CONSTRAINT "credit_price_pkey" PRIMARY KEY ("version")
);

-- CreateTable
CREATE TABLE "fx_rate" (
    "version" SERIAL NOT NULL,
    "currency" TEXT NOT NULL,
    "effective_month" DATE NOT NULL,
    "per_usd" DECIMAL NOT NULL,
    "note" TEXT,
    "published_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "published_by" TEXT NOT NULL,

    CONSTRAINT "fx_rate_pkey" PRIMARY KEY ("version")
);

-- CreateIndex
CREATE INDEX "fx_rate_currency_effective_month_idx" ON "fx_rate"("currency", "effective_month");

-- Hand-written: what the rows may hold (decisions §19).
ALTER TABLE credit_price
  ADD CONSTRAINT credit_price_month CHECK (effective_month = date_trunc('month', effective_month)::date),
  ADD CONSTRAINT credit_price_positive CHECK (usd_per_credit > 0);
ALTER TABLE fx_rate
  ADD CONSTRAINT fx_rate_month CHECK (effective_month = date_trunc('month', effective_month)::date),
  ADD CONSTRAINT fx_rate_positive CHECK (per_usd > 0),
  ADD CONSTRAINT fx_rate_currency CHECK (currency ~ '^[A-Z]{3}$' AND currency <> 'USD');
