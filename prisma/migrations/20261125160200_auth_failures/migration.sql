-- CreateTable
CREATE TABLE "auth_failure" (
    "key" VARCHAR(255) NOT NULL,
    "points" INTEGER NOT NULL DEFAULT 0,
    "expire" BIGINT,

    CONSTRAINT "auth_failure_pkey" PRIMARY KEY ("key")
);
