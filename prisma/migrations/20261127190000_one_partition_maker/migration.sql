-- One function makes a monthly partition and moves into it the rows its default partition took:
-- spendgate_add_partition (its file), used by spendgate_month_partition and by an archive's
-- restore. The restore's own copy of it, spendgate_restore_partition, goes.
DROP FUNCTION IF EXISTS public.spendgate_restore_partition(text, text, text);
