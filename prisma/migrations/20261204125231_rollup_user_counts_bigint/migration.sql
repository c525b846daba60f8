-- The monthly roll-ups by end user count in bigint. spend_rollup_user keeps one row a month for a
-- project's tasks without an end user (and one per user), spend_rollup_user_all one per user over
-- projects; their counts were int, so a project settling 828 tasks a second for a month (83 a
-- second of ten-image tasks) reached 2,147,483,647, and every later settlement of that project in
-- that month failed on "integer out of range": nothing settled, holds stayed held. The daily
-- roll-ups reach it only past 24,000 tasks a second of one model in one project (10 images each:
-- 2,400), so they stay int. Reads sum every count as bigint (src/common/counts.ts;
-- test/reports/large-counts.test.ts).
--
-- Rewrites both tables under ACCESS EXCLUSIVE locks: a million rows each took 6.4-6.6 s on the
-- 2-core VM (2026-12-04), during which settlements and user reports wait; submissions do not
-- (docs/operations.md).

-- AlterTable
ALTER TABLE "spend_rollup_user" ALTER COLUMN "tasks" SET DATA TYPE BIGINT,
ALTER COLUMN "unpriced_tasks" SET DATA TYPE BIGINT,
ALTER COLUMN "images" SET DATA TYPE BIGINT;

-- AlterTable
ALTER TABLE "spend_rollup_user_all" ALTER COLUMN "tasks" SET DATA TYPE BIGINT,
ALTER COLUMN "unpriced_tasks" SET DATA TYPE BIGINT,
ALTER COLUMN "images" SET DATA TYPE BIGINT;
