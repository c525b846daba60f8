-- CreateEnum
CREATE TYPE "Role" AS ENUM ('OWNER', 'FINANCE', 'LEAD', 'VIEWER');

-- CreateEnum
CREATE TYPE "PersonState" AS ENUM ('invited', 'active', 'disabled');

-- AlterTable
ALTER TABLE "api_key" ADD COLUMN     "created_by" TEXT,
ADD COLUMN     "expires_at" TIMESTAMPTZ(6),
ADD COLUMN     "last_used_at" TIMESTAMPTZ(6),
ADD COLUMN     "name" TEXT,
ADD COLUMN     "previous_hash" BYTEA,
ADD COLUMN     "previous_valid_until" TIMESTAMPTZ(6);

-- CreateTable
CREATE TABLE "person" (
    "id" UUID NOT NULL,
    "email" TEXT NOT NULL,
    "display_name" TEXT,
    "role" "Role" NOT NULL,
    "all_projects" BOOLEAN NOT NULL DEFAULT false,
    "project_ids" UUID[] DEFAULT ARRAY[]::UUID[],
    "state" "PersonState" NOT NULL DEFAULT 'invited',
    "oidc_issuer" TEXT,
    "oidc_subject" TEXT,
    "invited_by" TEXT,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_sign_in_at" TIMESTAMPTZ(6),
    "disabled_at" TIMESTAMPTZ(6),

    CONSTRAINT "person_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "service_account" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "role" "Role" NOT NULL,
    "all_projects" BOOLEAN NOT NULL DEFAULT false,
    "project_ids" UUID[] DEFAULT ARRAY[]::UUID[],
    "created_by" TEXT,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "disabled_at" TIMESTAMPTZ(6),

    CONSTRAINT "service_account_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "access_token" (
    "id" UUID NOT NULL,
    "prefix" TEXT NOT NULL,
    "hash" BYTEA NOT NULL,
    "name" TEXT NOT NULL,
    "person_id" UUID,
    "service_account_id" UUID,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(6),
    "last_used_at" TIMESTAMPTZ(6),
    "revoked_at" TIMESTAMPTZ(6),

    CONSTRAINT "access_token_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "session" (
    "id" BYTEA NOT NULL,
    "kind" TEXT NOT NULL,
    "person_id" UUID,
    "api_key_id" UUID,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(6) NOT NULL,
    "ended_at" TIMESTAMPTZ(6),
    "user_agent" TEXT,
    "client_address" TEXT,

    CONSTRAINT "session_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "sign_in_attempt" (
    "state" TEXT NOT NULL,
    "nonce" TEXT NOT NULL,
    "code_verifier" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sign_in_attempt_pkey" PRIMARY KEY ("state")
);

-- CreateTable
CREATE TABLE "audit_record" (
    "seq" BIGINT NOT NULL,
    "at" TIMESTAMPTZ(6) NOT NULL,
    "actor_kind" TEXT NOT NULL,
    "actor_id" TEXT,
    "actor" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "target_kind" TEXT,
    "target_id" TEXT,
    "project_id" UUID,
    "before" TEXT,
    "after" TEXT,
    "request_id" TEXT,
    "client_address" TEXT,
    "user_agent" TEXT,
    "prev_hash" BYTEA NOT NULL,
    "hash" BYTEA NOT NULL,

    CONSTRAINT "audit_record_pkey" PRIMARY KEY ("seq")
);

-- CreateIndex
CREATE UNIQUE INDEX "person_email_key" ON "person"("email");

-- CreateIndex
CREATE UNIQUE INDEX "person_oidc_issuer_oidc_subject_key" ON "person"("oidc_issuer", "oidc_subject");

-- CreateIndex
CREATE UNIQUE INDEX "service_account_name_key" ON "service_account"("name");

-- CreateIndex
CREATE UNIQUE INDEX "access_token_prefix_key" ON "access_token"("prefix");

-- CreateIndex
CREATE INDEX "access_token_person_id_idx" ON "access_token"("person_id");

-- CreateIndex
CREATE INDEX "access_token_service_account_id_idx" ON "access_token"("service_account_id");

-- CreateIndex
CREATE INDEX "session_person_id_idx" ON "session"("person_id");

-- CreateIndex
CREATE INDEX "audit_record_at_idx" ON "audit_record"("at");

-- CreateIndex
CREATE INDEX "audit_record_project_id_seq_idx" ON "audit_record"("project_id", "seq");

-- AddForeignKey
ALTER TABLE "access_token" ADD CONSTRAINT "access_token_person_id_fkey" FOREIGN KEY ("person_id") REFERENCES "person"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "access_token" ADD CONSTRAINT "access_token_service_account_id_fkey" FOREIGN KEY ("service_account_id") REFERENCES "service_account"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "session" ADD CONSTRAINT "session_person_id_fkey" FOREIGN KEY ("person_id") REFERENCES "person"("id") ON DELETE SET NULL ON UPDATE CASCADE;
