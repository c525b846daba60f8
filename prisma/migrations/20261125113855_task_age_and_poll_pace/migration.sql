-- AlterTable
ALTER TABLE "task" ADD COLUMN     "missing_polls" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "missing_since" TIMESTAMPTZ(6);

-- CreateTable
CREATE TABLE "poll_pace" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "next_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "poll_pace_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "poller_instance" (
    "id" TEXT NOT NULL,
    "seen_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "poller_instance_pkey" PRIMARY KEY ("id")
);
