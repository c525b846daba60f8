-- AlterEnum
ALTER TYPE "WebhookFormat" ADD VALUE 'EMAIL';

-- AlterTable
ALTER TABLE "outbox_event" ALTER COLUMN "project_id" DROP NOT NULL;

-- CreateTable
CREATE TABLE "spend_hourly" (
    "hour" TIMESTAMPTZ(6) NOT NULL,
    "dimension" TEXT NOT NULL,
    "project_id" UUID NOT NULL,
    "value" TEXT NOT NULL,
    "unit" "Unit" NOT NULL,
    "amount" DECIMAL NOT NULL DEFAULT 0,
    "tasks" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "spend_hourly_pkey" PRIMARY KEY ("hour","dimension","project_id","value","unit")
);

-- CreateTable
CREATE TABLE "anomaly_hour" (
    "hour" TIMESTAMPTZ(6) NOT NULL,
    "evaluated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "scopes" INTEGER NOT NULL,
    "anomalies" INTEGER NOT NULL,
    "millis" INTEGER NOT NULL,

    CONSTRAINT "anomaly_hour_pkey" PRIMARY KEY ("hour")
);

-- CreateIndex
CREATE INDEX "spend_hourly_scope" ON "spend_hourly"("dimension", "project_id", "value", "unit", "hour");
